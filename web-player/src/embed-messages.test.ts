import { describe, expect, it } from 'vitest';
import { MAX_UI_INTERACTION_CODE_UNITS, parseHostMessage, queueState } from './embed-messages';

describe('parseHostMessage', () => {
  it('accepts a uiInteraction carrying a JSON object, array or string', () => {
    for (const data of [{ action: 'jump', height: 2 }, [1, 2], 'hello']) {
      expect(parseHostMessage({ source: 'pixelfleet-host', type: 'uiInteraction', data })).toEqual({
        source: 'pixelfleet-host',
        type: 'uiInteraction',
        data,
      });
    }
  });

  it.each([
    ['null', null],
    ['a string', 'uiInteraction'],
    ['our own outgoing messages', { source: 'pixelfleet', type: 'state', state: 'queue-1' }],
    ['another source', { source: 'react-devtools', type: 'uiInteraction', data: {} }],
    ['an unknown type', { source: 'pixelfleet-host', type: 'command', data: {} }],
    ['missing data', { source: 'pixelfleet-host', type: 'uiInteraction' }],
    ['null data', { source: 'pixelfleet-host', type: 'uiInteraction', data: null }],
    ['number data', { source: 'pixelfleet-host', type: 'uiInteraction', data: 42 }],
    ['BigInt inside', { source: 'pixelfleet-host', type: 'uiInteraction', data: { n: 1n } }],
  ])('ignores %s', (_what, value) => {
    expect(parseHostMessage(value)).toBeUndefined();
  });

  it('ignores cyclic data', () => {
    const data: Record<string, unknown> = {};
    data['self'] = data;
    expect(parseHostMessage({ source: 'pixelfleet-host', type: 'uiInteraction', data })).toBeUndefined();
  });

  it('ignores data whose JSON is longer than a UIInteraction can carry', () => {
    const fits = 'x'.repeat(MAX_UI_INTERACTION_CODE_UNITS - 2); // JSON adds two quotes
    expect(parseHostMessage({ source: 'pixelfleet-host', type: 'uiInteraction', data: fits })).toBeDefined();
    expect(parseHostMessage({ source: 'pixelfleet-host', type: 'uiInteraction', data: `${fits}x` })).toBeUndefined();
  });

  it('names queue states queue-N', () => {
    expect(queueState(3)).toBe('queue-3');
  });
});
