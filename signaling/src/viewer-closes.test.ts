// The one table of viewer closes: its own rules, the parser's fixed reasons it names, and the
// the close-code table of docs/streaming.md, which must say exactly what the table says.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CLOSE_CODES, MAX_CLOSE_REASON_BYTES, isSendableCloseCode } from './close-codes';
import { parseSignallingMessage } from './parser';
import { TOO_MANY_MESSAGES_REASON } from './signalling-socket';
import { VIEWER_CLOSES, VIEWER_CLOSE_NAME_BY_CODE, VIEWER_CLOSE_SENTENCES, viewerClose, type ViewerCloseName } from './viewer-closes';

const entries = Object.entries(VIEWER_CLOSES) as [ViewerCloseName, (typeof VIEWER_CLOSES)[ViewerCloseName]][];

describe('VIEWER_CLOSES', () => {
  it('gives each code one sentence, its entries side by side in code order, and names the code by its first entry', () => {
    const codes = entries.map(([, e]) => e.code);
    expect(codes).toEqual([...codes].sort((a, b) => a - b));
    for (const [name, entry] of entries) {
      expect(VIEWER_CLOSE_SENTENCES[entry.code]).toBe(entry.sentence);
      if (entries.find(([, e]) => e.code === entry.code)?.[0] === name) expect(VIEWER_CLOSE_NAME_BY_CODE.get(entry.code)).toBe(name);
    }
    expect(Object.keys(VIEWER_CLOSE_SENTENCES).map(Number)).toEqual([...new Set(codes)]);
  });

  it('holds every code a viewer can meet, and no code twice with the same reason', () => {
    expect([...VIEWER_CLOSE_NAME_BY_CODE.keys()]).toEqual([1000, 1001, 1002, 1003, 1005, 1006, 1007, 1008, 1009, 1012, 4000, 4001, 4002, 4003, 4004, 4006, 4007, 4008, 4009, 4010, 4011, 4012, 4013, 4014, 4015, 4016]);
    const pairs = entries.filter(([, e]) => e.reason !== '').map(([, e]) => `${e.code} ${e.reason}`);
    expect(new Set(pairs).size).toBe(pairs.length);
  });

  it('sends only codes a close frame may carry, with reasons that fit one', () => {
    for (const [, entry] of entries) {
      if (entry.code === CLOSE_CODES.abnormal || entry.code === CLOSE_CODES.noStatus) continue; // reported by the browser, never sent
      expect(isSendableCloseCode(entry.code)).toBe(true);
      expect(Buffer.byteLength(entry.reason, 'utf8')).toBeLessThanOrEqual(MAX_CLOSE_REASON_BYTES);
    }
  });

  it("names the socket's and the parser's fixed reasons", () => {
    expect(TOO_MANY_MESSAGES_REASON).toBe(VIEWER_CLOSES.tooManyMessages.reason);
    expect(parseSignallingMessage(Buffer.from('{}'), 'player', { binary: true })).toEqual({
      ok: false,
      reason: VIEWER_CLOSES.unsupportedData.reason,
      closeCode: VIEWER_CLOSES.unsupportedData.code,
    });
    expect(parseSignallingMessage('not json', 'player')).toMatchObject({ ok: false, closeCode: VIEWER_CLOSES.policyViolation.code });
    expect(parseSignallingMessage('x'.repeat(100), 'player', { maxBytes: 10 })).toMatchObject({ ok: false, closeCode: VIEWER_CLOSES.messageTooBig.code });
  });

  it('gives viewerClose the frame only: code and reason', () => {
    expect(viewerClose('workerLost')).toEqual({ code: 4006, reason: 'streaming server lost' });
  });
});

describe("the close-code table of docs/streaming.md", () => {
  it('has one row per entry, with its code, name, reason and sentence', () => {
    const readme = readFileSync(new URL('../../docs/streaming.md', import.meta.url), 'utf8');
    const header = '| Close code | Name | Reason sent | Viewer reads | When |';
    const start = readme.indexOf(header);
    expect(start).toBeGreaterThan(0);
    const rows = readme
      .slice(start)
      .split('\n')
      .slice(2)
      .filter((line, i, lines) => lines.slice(0, i + 1).every((l) => l.startsWith('|')))
      .map((line) => line.split(' | ').map((cell) => cell.replace(/^\| ?| ?\|$/g, '')));
    const unquote = (cell: string | undefined) => (cell === '—' ? '' : (cell ?? '').replace(/^`|`$/g, ''));
    const readmeTable = rows.map(([code, name, reason, sentence]) => ({ code: Number(code), name: unquote(name), reason: unquote(reason), sentence }));
    expect(readmeTable).toEqual(entries.map(([name, e]) => ({ code: e.code, name, reason: e.reason, sentence: e.sentence })));
  });
});
