// Certificates made at test time with the openssl CLI (P-256 keys, fast): a CA, server
// certificates (good for 127.0.0.1/localhost, expired, for another host, from another CA) and
// client certificates for mutual TLS. Files only; each test reads the paths it needs.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface CertPair {
  certFile: string;
  keyFile: string;
}

export interface TestPki {
  dir: string;
  /** The CA everything below is signed by (but `otherCa`'s). */
  caFile: string;
  /** An unrelated CA (a "wrong CA" for either side). */
  otherCaFile: string;
  /** Server certificate for IP 127.0.0.1 and DNS localhost. */
  server: CertPair;
  /** The same names, a different key and serial: what a renewal brings (SIGHUP tests). */
  renewed: CertPair;
  /** Server certificate for 127.0.0.1/localhost whose validity ended yesterday. */
  expired: CertPair;
  /** Server certificate naming only pixelfleet.invalid (dialing 127.0.0.1 is a host name mismatch). */
  wrongHost: CertPair;
  /** Server certificate for 127.0.0.1/localhost signed by otherCa. */
  otherCaServer: CertPair;
  /** Client certificate signed by the CA (mutual TLS). */
  client: CertPair;
  /** Client certificate signed by otherCa. */
  otherCaClient: CertPair;
}

function openssl(dir: string, args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
}

const EC = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

function makeCa(dir: string, name: string): { cert: string; key: string } {
  openssl(dir, ['req', '-x509', ...EC, '-keyout', `${name}.key`, '-out', `${name}.pem`, '-days', '2', '-subj', `/CN=Pixelfleet test ${name}`,
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign']);
  return { cert: join(dir, `${name}.pem`), key: join(dir, `${name}.key`) };
}

let serial = 1;

function makeLeaf(dir: string, ca: { cert: string; key: string }, name: string, opts: { san?: string; usage: 'serverAuth' | 'clientAuth'; days?: number }): CertPair {
  openssl(dir, ['req', '-new', ...EC, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${name}`]);
  const ext = join(dir, `${name}.ext`);
  writeFileSync(ext, `${opts.san === undefined ? '' : `subjectAltName=${opts.san}\n`}extendedKeyUsage=${opts.usage}\nbasicConstraints=CA:FALSE\n`);
  serial += 1;
  // -days -1: valid from now until yesterday, which every verifier reports as expired.
  openssl(dir, ['x509', '-req', '-in', `${name}.csr`, '-CA', ca.cert, '-CAkey', ca.key, '-set_serial', String(serial), '-out', `${name}.pem`,
    '-days', String(opts.days ?? 2), '-extfile', ext]);
  return { certFile: join(dir, `${name}.pem`), keyFile: join(dir, `${name}.key`) };
}

/** Makes the whole set in a fresh temporary directory (about a second). */
export function makeTestPki(): TestPki {
  const dir = mkdtempSync(join(tmpdir(), 'pf-pki-'));
  const ca = makeCa(dir, 'ca');
  const other = makeCa(dir, 'other-ca');
  const local = 'IP:127.0.0.1,DNS:localhost';
  return {
    dir,
    caFile: ca.cert,
    otherCaFile: other.cert,
    server: makeLeaf(dir, ca, 'server', { san: local, usage: 'serverAuth' }),
    renewed: makeLeaf(dir, ca, 'renewed', { san: local, usage: 'serverAuth' }),
    expired: makeLeaf(dir, ca, 'expired', { san: local, usage: 'serverAuth', days: -1 }),
    wrongHost: makeLeaf(dir, ca, 'wrong-host', { san: 'DNS:pixelfleet.invalid', usage: 'serverAuth' }),
    otherCaServer: makeLeaf(dir, other, 'other-ca-server', { san: local, usage: 'serverAuth' }),
    client: makeLeaf(dir, ca, 'client', { usage: 'clientAuth' }),
    otherCaClient: makeLeaf(dir, other, 'other-ca-client', { usage: 'clientAuth' }),
  };
}
