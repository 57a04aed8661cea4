import { describe, expect, it } from 'vitest';
import { crossesNetworkInPlaintext, describeTlsFailure, hostOf, isLoopbackHost, usesTls } from './tls';

const KEYS = { caFile: 'tls.caFile', serverName: 'tls.serverName', certFile: 'tls.certFile' };

describe('which transport a target gets', () => {
  it('knows loopback hosts', () => {
    for (const h of ['127.0.0.1', '127.1.2.3', '::1', '[::1]', 'localhost', 'LOCALHOST']) expect(isLoopbackHost(h)).toBe(true);
    for (const h of ['0.0.0.0', '::', '10.0.0.1', '128.0.0.1', 'cp.example.com', 'localhost.example.com']) expect(isLoopbackHost(h)).toBe(false);
  });

  it('knows every spelling of ::1 and of IPv4-mapped 127.0.0.0/8, and nothing else mapped', () => {
    for (const h of ['0:0:0:0:0:0:0:1', '0::1', '[0000::0001]', '::ffff:127.0.0.1', '[::FFFF:127.9.8.7]', '::ffff:7f00:1', '0:0:0:0:0:ffff:7f00:0001']) expect(isLoopbackHost(h), h).toBe(true);
    for (const h of ['::ffff:10.0.0.1', '::ffff:128.0.0.1', '::ffff:a00:1', '::2', '::127.0.0.1', 'fe80::1']) expect(isLoopbackHost(h), h).toBe(false);
  });

  it('says which URLs cross a network in plaintext: http:// to a host that is not loopback', () => {
    for (const u of ['http://10.0.0.5:8080/a', 'http://cp.example.com', 'http://[2001:db8::5]:8080', 'http://0.0.0.0:8080', 'http://[::ffff:10.0.0.1]/']) expect(crossesNetworkInPlaintext(u), u).toBe(true);
    for (const u of ['https://10.0.0.5', 'http://127.0.0.1:8080', 'http://localhost/x', 'http://[::1]:1', 'http://[::ffff:127.0.0.1]:8080/', 'http://user:pw@127.0.0.1/', 'not a url']) expect(crossesNetworkInPlaintext(u), u).toBe(false);
    expect(crossesNetworkInPlaintext(new URL('http://10.0.0.5'))).toBe(true);
  });

  it('takes the host of host:port and [v6]:port', () => {
    expect(hostOf('cp.example.com:50051')).toBe('cp.example.com');
    expect(hostOf('[::1]:50051')).toBe('::1');
    expect(hostOf('10.0.0.1:1')).toBe('10.0.0.1');
  });

  it('uses TLS unless the target is loopback with no TLS setting, or insecure says otherwise', () => {
    expect(usesTls('cp.example.com:50051', {})).toBe(true);
    expect(usesTls('127.0.0.1:50051', {})).toBe(false);
    expect(usesTls('[::1]:50051', {})).toBe(false);
    expect(usesTls('127.0.0.1:50051', { caFile: 'ca.pem' })).toBe(true);
    expect(usesTls('localhost:50051', { serverName: 'cp' })).toBe(true);
    expect(usesTls('127.0.0.1:50051', { insecure: false })).toBe(true);
    expect(usesTls('cp.example.com:50051', { insecure: true })).toBe(false);
  });
});

describe('describeTlsFailure', () => {
  it('names the cause of each handshake error grpc-js reports, and nothing else', () => {
    expect(describeTlsFailure('No connection established. Last error: Error: certificate has expired.', KEYS)).toMatch(/certificate has expired/);
    expect(describeTlsFailure('Last error: Error: unable to verify the first certificate.', KEYS)).toMatch(/not signed by a trusted CA \(set tls\.caFile/);
    expect(describeTlsFailure('Last error: Error: self-signed certificate in certificate chain.', KEYS)).toMatch(/not signed by a trusted CA/);
    expect(describeTlsFailure("Error [ERR_TLS_CERT_ALTNAME_INVALID]: Hostname/IP does not match certificate's altnames", KEYS)).toMatch(/does not name the host dialed .*tls\.serverName/);
    expect(describeTlsFailure('ssl3_read_bytes:tlsv13 alert certificate required', KEYS)).toMatch(/requires a client certificate \(set tls\.certFile\)/);
    expect(describeTlsFailure('connect ECONNREFUSED 127.0.0.1:50051', KEYS)).toBeUndefined();
    expect(describeTlsFailure('Deadline exceeded', KEYS)).toBeUndefined();
  });

  it('explains a connection cut without a reason by how the client dialed', () => {
    const cut = 'No connection established. Last error: Failed to connect (2026-11-25T08:33:29.591Z).';
    expect(describeTlsFailure(cut, KEYS)).toBeUndefined();
    expect(describeTlsFailure(cut, KEYS, { tls: false, clientCert: false })).toMatch(/may require TLS .*tls\.caFile/);
    expect(describeTlsFailure(cut, KEYS, { tls: true, clientCert: true })).toMatch(/may not accept this client certificate/);
    expect(describeTlsFailure(cut, KEYS, { tls: true, clientCert: false })).toBeUndefined();
  });
});
