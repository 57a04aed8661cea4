import { describe, expect, it } from 'vitest';
import { candidateAddress, viewerCandidateAllowed } from './viewer-candidates';

describe('candidateAddress', () => {
  it.each([
    ['candidate:842163049 1 udp 1677729535 93.184.216.34 54321 typ srflx raddr 10.0.0.2 rport 54321 generation 0', '93.184.216.34'],
    ['a=candidate:1 1 UDP 2122252543 2a01:4f8::7 40000 typ host', '2a01:4f8::7'],
    ['candidate:1 1 udp 2122260223 4f3a6c1e-2b7d.local 54400 typ host', '4f3a6c1e-2b7d.local'],
    ['candidate:1 1 tcp 1518280447 10.1.2.3 9 typ host tcptype active', '10.1.2.3'],
    ['', undefined],
    ['not a candidate at all', undefined],
    ['candidate:1 1 udp 1 10.0.0.1 22', undefined], // no "typ"
    ['foundation:1 1 udp 1 10.0.0.1 22 typ host', undefined],
  ])('%j → %s', (line, address) => {
    expect(candidateAddress(line)).toBe(address);
  });
});

describe('viewerCandidateAllowed', () => {
  const line = (address: string, type = 'host') => `candidate:1 1 udp 2122260223 ${address} 50000 typ ${type}`;

  it.each([
    ['10.0.0.5', false],
    ['172.16.4.4', false],
    ['192.168.1.20', false],
    ['127.0.0.1', false],
    ['169.254.169.254', false], // cloud metadata
    ['100.64.0.9', false], // CGNAT
    ['::1', false],
    ['fe80::1', false],
    ['fd00::5', false],
    ['::ffff:10.0.0.5', false],
    ['4f3a6c1e-2b7d-4c55-9a0e-6f1b2c3d4e5f.local', false], // a browser's mDNS host name
    ['metadata.google.internal', false], // a host name the worker would resolve itself
    ['93.184.216.34', true],
    ['2a01:4f8:c0c:1::7', true],
  ])('%s: %s', (address, allowed) => {
    expect(viewerCandidateAllowed(line(address), false)).toBe(allowed);
    expect(viewerCandidateAllowed(line(address, 'srflx'), false)).toBe(allowed);
  });

  it('the end of candidates always passes; a line that is not a candidate passes only when private candidates are allowed', () => {
    expect(viewerCandidateAllowed('', false)).toBe(true);
    expect(viewerCandidateAllowed('garbage', false)).toBe(false);
    expect(viewerCandidateAllowed('garbage', true)).toBe(true);
  });

  it('network.allowPrivateViewerCandidates lets every address through (LAN deployments, the demo)', () => {
    for (const address of ['10.0.0.5', '127.0.0.1', 'fe80::1', 'x.local', '93.184.216.34']) expect(viewerCandidateAllowed(line(address), true)).toBe(true);
  });
});
