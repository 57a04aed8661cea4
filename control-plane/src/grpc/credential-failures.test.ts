import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { ManualClock, SAMPLED_LOG_INTERVAL_MS } from '@pixelfleet/common';
import { CREDENTIAL_FAILURE_BURST, CredentialFailures, TOO_MANY_FAILURES_MESSAGE, peerAddress } from './credential-failures';

const WRONG = 'Enroll refused: missing or invalid join token';

function setup() {
  const clock = new ManualClock();
  const lines: Record<string, unknown>[] = [];
  const log = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
  return { clock, lines, failures: new CredentialFailures(clock, log) };
}

describe('peerAddress', () => {
  it('reads the address of a grpc-js peer', () => {
    expect(peerAddress('203.0.113.5:51234')).toBe('203.0.113.5');
    expect(peerAddress('[2001:db8::1]:51234')).toBe('2001:db8::1');
    expect(peerAddress('ipv4:203.0.113.5:51234')).toBe('203.0.113.5');
    expect(peerAddress('ipv6:[2001:db8::1]:51234')).toBe('2001:db8::1');
    expect(peerAddress('unix:/run/pf.sock')).toBe('unix:/run/pf.sock');
  });
});

describe('CredentialFailures', () => {
  it(`lets an address fail ${CREDENTIAL_FAILURE_BURST} checks back to back, then refuses it unchecked until its bucket refills; another address is not affected`, () => {
    const { clock, failures } = setup();
    const guesser = 'ipv4:203.0.113.5:40000';
    for (let i = 0; i < CREDENTIAL_FAILURE_BURST; i++) {
      expect(failures.mayCheck(guesser, {})).toBe(true);
      failures.failed(`ipv4:203.0.113.5:${40001 + i}`, WRONG, {}); // each call from a new port: the address counts
    }
    expect(failures.mayCheck(guesser, {})).toBe(false);
    expect(failures.mayCheck('ipv4:203.0.113.6:40000', {})).toBe(true);
    // An IPv6 guesser rotating its interface id stays in its /64.
    for (let i = 0; i < CREDENTIAL_FAILURE_BURST; i++) failures.failed(`ipv6:[2001:db8:0:1::${i + 1}]:1`, WRONG, {});
    expect(failures.mayCheck('ipv6:[2001:db8:0:1::ffff]:1', {})).toBe(false);
    clock.advance(10_000); // six a minute: one more check
    expect(failures.mayCheck(guesser, {})).toBe(true);
    failures.failed(guesser, WRONG, {});
    expect(failures.mayCheck(guesser, {})).toBe(false);
  });

  it('logs the first failure of an address at once, then at most one line a minute per message with the number refused since', () => {
    const { clock, lines, failures } = setup();
    const guesser = 'ipv4:203.0.113.5:40000';
    for (let i = 0; i < 100; i++) if (failures.mayCheck(guesser, { method: 'Enroll' })) failures.failed(guesser, WRONG, { method: 'Enroll' });
    expect(lines.map((l) => [l.msg, l.count])).toEqual([
      [WRONG, 1],
      [TOO_MANY_FAILURES_MESSAGE, 1],
    ]);
    expect(lines[0]).toMatchObject({ level: 40, address: '203.0.113.5', peer: guesser, method: 'Enroll' });
    // A minute on: six more checks (each wrong), then refusals again. The lines count what went unlogged:
    // 9 wrong guesses and 89 unchecked refusals since the first lines.
    clock.advance(SAMPLED_LOG_INTERVAL_MS);
    for (let i = 0; i < 20; i++) if (failures.mayCheck(guesser, { method: 'Enroll' })) failures.failed(guesser, WRONG, { method: 'Enroll' });
    expect(lines.slice(2).map((l) => [l.msg, l.count])).toEqual([
      [WRONG, 10],
      [TOO_MANY_FAILURES_MESSAGE, 90],
    ]);
  });
});
