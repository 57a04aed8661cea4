// Identifier sources. Injected (like the clock) so tests can predict ids; the default draws
// random ids with a prefix that says what the id names.
import { randomBytes, randomInt } from 'node:crypto';

export interface IdSource {
  /** A new id for an entity kind, e.g. `usr_3f9a…`. */
  next(prefix: 'usr' | 'prj' | 'wrk' | 'upl' | 'cmd' | 'log'): string;
  /** A new session id in the spec's form `session_<digits>_<digits>`. */
  nextSessionId(nowMs: number): string;
}

export const randomIds: IdSource = {
  next: (prefix) => `${prefix}_${randomBytes(12).toString('hex')}`,
  nextSessionId: (nowMs) => `session_${nowMs}_${randomInt(100_000_000, 1_000_000_000)}`,
};

/** The spec's session id form, `session_<digits>_<digits>` (each part at most 20 digits). */
const SESSION_ID = /^session_\d{1,20}_\d{1,20}$/;

/** True for a string in the session id form; says nothing about whether such a session exists. */
export function isSessionId(value: string): boolean {
  return SESSION_ID.test(value);
}
