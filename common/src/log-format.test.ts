import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from './logger';
import { chooseLogFormat, logDestination } from './log-format';

describe('log format', () => {
  it('is pretty for a terminal and JSON for anything else', () => {
    expect(chooseLogFormat(true)).toBe('pretty');
    expect(chooseLogFormat(false)).toBe('json');
    expect(chooseLogFormat(undefined)).toBe('json'); // a pipe or file: process.stdout.isTTY is undefined
    expect(logDestination('json')).toBeUndefined();
  });

  it('pretty lines are readable and keep the redaction', () => {
    let text = '';
    const out = new Writable({
      write(chunk: Buffer, _enc, done) {
        text += chunk.toString();
        done();
      },
    });
    const log = createLogger('info', logDestination('pretty', out));
    log.info({ workerId: 'wrk_1', token: 'a-secret-token-value' }, 'agent connected with pfk_0123456789abcdefghijklmnop');
    expect(text).toMatch(/^\[\d{2}:\d{2}:\d{2}\.\d{3}\] INFO.*: agent connected with/);
    expect(text).toContain('workerId: "wrk_1"');
    expect(text).not.toContain('a-secret-token-value');
    expect(text).not.toContain('pfk_0123456789abcdefghijklmnop');
    expect(text).not.toContain('{"level"');
  });
});
