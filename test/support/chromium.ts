// Debian's chromium driven by playwright-core (never a downloaded browser), with the flags a
// loopback-only machine needs (werift-notes.md §5, §7), and the flag that makes it trust exactly
// one test certificate. Missing chromium fails loudly.
import { createHash, createPublicKey } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';

export const CHROMIUM_PATH = '/usr/bin/chromium';

export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--autoplay-policy=no-user-gesture-required',
  '--allow-loopback-in-peer-connection',
  '--disable-features=WebRtcHideLocalIpsWithMdns',
];

/**
 * The flag that makes Chromium accept a server certificate whose public key is this certificate's
 * (base64 SHA-256 of its SubjectPublicKeyInfo), and no other untrusted one: a test of an HTTPS
 * server then fails when the server presents another certificate (ERR_CERT_AUTHORITY_INVALID).
 */
export function trustOnlyCertificateArg(certFile: string): string {
  const der = createPublicKey(readFileSync(certFile)).export({ type: 'spki', format: 'der' });
  return `--ignore-certificate-errors-spki-list=${createHash('sha256').update(der).digest('base64')}`;
}

/** extraArgs: e.g. the fake media flags of a page that must gather host candidates (realistic-stream.ts). */
export async function launchChromium(extraArgs: readonly string[] = []): Promise<{ context: BrowserContext; close: () => Promise<void> }> {
  if (!existsSync(CHROMIUM_PATH)) {
    throw new Error(`${CHROMIUM_PATH} is missing: install Debian's chromium (apt-get install chromium); .ci/run does this`);
  }
  const profile = mkdtempSync(join(tmpdir(), 'pf-chromium-'));
  const context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM_PATH, headless: true, args: [...CHROMIUM_ARGS, ...extraArgs] });
  return {
    context,
    close: async () => {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
