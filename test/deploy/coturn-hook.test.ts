// deploy/coturn/certbot-deploy-hook.sh, run as certbot runs it (an executable with RENEWED_LINEAGE
// set) against a temp dir laid out as /etc/letsencrypt is (live/ links into archive/): the copies
// are plain files owned by the coturn user with mode 0600, renewed in place, coturn is told to
// reload only once both are there, and a failure leaves the previous copies and no stray files.
import { spawnSync } from 'node:child_process';
import { chmodSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../support/cli-process';

const HOOK = join(REPO_ROOT, 'deploy/coturn/certbot-deploy-hook.sh');
const CONF = join(REPO_ROOT, 'deploy/coturn/turnserver.conf');

let root: string;
let lineage: string;
let dest: string;
let reloads: string;

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'pf-coturn-hook-'));
  lineage = join(root, 'letsencrypt/live/turn.example.com');
  dest = join(root, 'coturn');
  reloads = join(root, 'reloads.log');
  mkdirSync(lineage, { recursive: true });
  mkdirSync(join(root, 'letsencrypt/archive/turn.example.com'), { recursive: true });
});

afterEach(() => rmSync(root, { recursive: true, force: true }));

/** certbot's layout: archive/<name>/{fullchain,privkey}<n>.pem (the key root's only), live/<name>/*.pem links to the newest. */
function issue(n: number): { cert: string; key: string } {
  const cert = `-----BEGIN CERTIFICATE-----\ncertificate ${n}\n-----END CERTIFICATE-----\n`;
  const key = `-----BEGIN PRIVATE KEY-----\nkey ${n}\n-----END PRIVATE KEY-----\n`;
  const archive = join(root, 'letsencrypt/archive/turn.example.com');
  writeFileSync(join(archive, `fullchain${n}.pem`), cert, { mode: 0o644 });
  writeFileSync(join(archive, `privkey${n}.pem`), key, { mode: 0o600 });
  for (const name of ['fullchain', 'privkey']) {
    rmSync(join(lineage, `${name}.pem`), { force: true });
    symlinkSync(`../../archive/turn.example.com/${name}${n}.pem`, join(lineage, `${name}.pem`));
  }
  return { cert, key };
}

/** Runs the hook as certbot does (exec of the file itself), with its paths pointed into the temp dir. */
function runHook(env: Record<string, string | undefined> = {}) {
  const base: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    RENEWED_LINEAGE: lineage,
    RENEWED_DOMAINS: 'turn.example.com',
    COTURN_CERT_DIR: dest,
    COTURN_OWNER: userInfo().username,
    // What coturn would load at this moment: each copy's mode and owner, one line per reload.
    COTURN_RELOAD: `stat -c '%n %a %u' "$COTURN_CERT_DIR/fullchain.pem" "$COTURN_CERT_DIR/privkey.pem" | tr '\\n' ' ' >> '${reloads}'; echo >> '${reloads}'`,
  };
  for (const [k, v] of Object.entries(env)) {
    if (v === undefined) delete base[k];
    else base[k] = v;
  }
  return spawnSync(HOOK, [], { env: base, encoding: 'utf8' });
}

const reloadLines = (): string[] => {
  try {
    return readFileSync(reloads, 'utf8').split('\n').filter(Boolean);
  } catch {
    return [];
  }
};

function expectCopy(name: string, content: string): void {
  const file = join(dest, name);
  expect(lstatSync(file).isFile()).toBe(true);
  expect(lstatSync(file).mode & 0o777).toBe(0o600);
  expect(lstatSync(file).uid).toBe(process.getuid!());
  expect(readFileSync(file, 'utf8')).toBe(content);
}

describe('the certbot deploy hook for coturn', () => {
  it('is an executable sh script whose default paths are the ones turnserver.conf names', () => {
    expect(statSync(HOOK).mode & 0o111).toBe(0o111);
    const script = readFileSync(HOOK, 'utf8');
    expect(script.startsWith('#!/bin/sh\n')).toBe(true);
    expect(script).toContain('dest="${COTURN_CERT_DIR:-/etc/coturn}"');
    expect(script).toContain('owner="${COTURN_OWNER:-turnserver}"');
    const conf = readFileSync(CONF, 'utf8');
    expect(conf).toMatch(/^cert=\/etc\/coturn\/fullchain\.pem$/m);
    expect(conf).toMatch(/^pkey=\/etc\/coturn\/privkey\.pem$/m);
    expect(conf).not.toMatch(/^(cert|pkey)=\/etc\/letsencrypt/m);
    // sh -n: dash (Debian's /bin/sh) parses it.
    expect(spawnSync('dash', ['-n', HOOK], { encoding: 'utf8' }).status).toBe(0);
  });

  it('copies the certificate and key as plain files, owner the coturn user, mode 0600, then reloads coturn; a renewal replaces them', () => {
    const first = issue(1);
    const run = runHook();
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    expect(run.stdout).toContain(`${dest}/privkey.pem updated from ${lineage}`);
    expectCopy('fullchain.pem', first.cert);
    expectCopy('privkey.pem', first.key);
    expect(readdirSync(dest).sort()).toEqual(['fullchain.pem', 'privkey.pem']);
    // The reload came once both copies were in place, already 0600 and the owner's.
    const uid = process.getuid!();
    expect(reloadLines()).toEqual([`${dest}/fullchain.pem 600 ${uid} ${dest}/privkey.pem 600 ${uid} `]);

    // A renewal: new files in archive/, live/ links moved; copies someone loosened are put right.
    const second = issue(2);
    chmodSync(join(dest, 'privkey.pem'), 0o644);
    expect(runHook().status).toBe(0);
    expectCopy('fullchain.pem', second.cert);
    expectCopy('privkey.pem', second.key);
    expect(readdirSync(dest).sort()).toEqual(['fullchain.pem', 'privkey.pem']);
    expect(reloadLines()).toHaveLength(2);
  });

  it('copies nothing and does not reload when the key cannot be read, or certbot did not say which certificate', () => {
    const first = issue(1);
    expect(runHook().status).toBe(0);
    unlinkSync(join(lineage, 'privkey.pem'));
    const missing = runHook();
    expect(missing.status).toBe(66);
    expect(missing.stderr).toBe(`coturn-certbot-deploy-hook: cannot read ${lineage}/privkey.pem; nothing copied\n`);
    const unset = runHook({ RENEWED_LINEAGE: undefined });
    expect(unset.status).toBe(64);
    expect(unset.stderr).toMatch(/^coturn-certbot-deploy-hook: RENEWED_LINEAGE is not set/);
    expectCopy('privkey.pem', first.key);
    expect(reloadLines()).toHaveLength(1);
  });

  it('leaves the previous copies and no temporary files when it cannot hand them to the coturn user', () => {
    const first = issue(1);
    expect(runHook().status).toBe(0);
    issue(2);
    const run = runHook({ COTURN_OWNER: 'no-such-user-pixelfleet' });
    expect(run.status).not.toBe(0);
    expect(run.stderr).toMatch(/chown/);
    expectCopy('fullchain.pem', first.cert);
    expectCopy('privkey.pem', first.key);
    expect(readdirSync(dest).sort()).toEqual(['fullchain.pem', 'privkey.pem']);
    expect(reloadLines()).toHaveLength(1);
  });

  it('says so, and fails, when coturn could not be told to reload', () => {
    issue(1);
    const run = runHook({ COTURN_RELOAD: 'exit 3' });
    expect(run.status).toBe(1);
    expect(run.stderr).toBe(`coturn-certbot-deploy-hook: copied the certificate to ${dest}, but 'exit 3' failed: coturn still serves the previous one until it restarts\n`);
    expect(readdirSync(dest).sort()).toEqual(['fullchain.pem', 'privkey.pem']);
  });
});
