// What an operator's secret (the admin token, the agents' join token, the metrics bearer token,
// the TURN secret) must be before a program starts with it: not the sample config's placeholder,
// long, and not made of a few characters repeated. Both `serve` and the agent check theirs at start
// and refuse to run (exit 78) with one line naming the key, so a copied sample never guards a fleet.

/** The shortest secret accepted: 32 characters (`openssl rand -hex 32` makes 64). */
export const MIN_SECRET_CHARS = 32;

/**
 * The least entropy accepted, in bits, estimated from the secret's own character frequencies
 * (length × Shannon entropy per character). 32 random hex characters score 91–125 (none of 200,000
 * drawn scored less), 43 random base64url characters about 200; `aaaa…` (0) or `passwordpassword…` (88) score less. It is a floor
 * against the obvious, not a measure of strength: a secret should be random.
 */
export const MIN_SECRET_BITS = 90;

/** The sample configs' placeholder; a secret containing it (any case) is the sample's, not the operator's. */
export const PLACEHOLDER_MARK = 'change-me';

/** How to make a good one, for the refusal and the sample configs. */
export const SECRET_ADVICE = 'generate one with `openssl rand -hex 32`';

/** Why `secret` may not be used, or undefined when it is fine. */
export function weakSecretReason(secret: string): string | undefined {
  if (secret.toLowerCase().includes(PLACEHOLDER_MARK)) return `is the sample config's placeholder (${PLACEHOLDER_MARK.toUpperCase()}…); ${SECRET_ADVICE}`;
  if (secret.length < MIN_SECRET_CHARS) return `must be at least ${MIN_SECRET_CHARS} characters (it has ${secret.length}); ${SECRET_ADVICE}`;
  if (estimatedBits(secret) < MIN_SECRET_BITS) return `is too easy to guess (a few characters repeated: about ${Math.floor(estimatedBits(secret))} bits, at least ${MIN_SECRET_BITS} needed); ${SECRET_ADVICE}`;
  return undefined;
}

/** length × the Shannon entropy of the secret's character frequencies. */
function estimatedBits(secret: string): number {
  const counts = new Map<string, number>();
  for (const c of secret) counts.set(c, (counts.get(c) ?? 0) + 1);
  const n = [...secret].length;
  let perChar = 0;
  for (const count of counts.values()) perChar -= (count / n) * Math.log2(count / n);
  return perChar * n;
}
