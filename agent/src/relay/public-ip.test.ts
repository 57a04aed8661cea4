import { describe, expect, it } from 'vitest';
import { advertisePublicIp, publicIpCandidate } from './public-ip';

describe('publicIpCandidate', () => {
  it('repeats a private UDP host candidate with the public address, same port, new foundation, lower priority', () => {
    expect(publicIpCandidate('candidate:abc 1 udp 2116026367 10.0.0.5 50000 typ host generation 0 ufrag x', '203.0.113.7')).toBe(
      'candidate:pabc 1 udp 2116026366 203.0.113.7 50000 typ host generation 0 ufrag x',
    );
    expect(publicIpCandidate('a=candidate:abc 1 udp 100 10.0.0.5 50000 typ host', '203.0.113.7')).toBe('a=candidate:pabc 1 udp 99 203.0.113.7 50000 typ host');
  });

  it('leaves loopback, srflx/relay, TCP, IPv6 and the public address itself alone', () => {
    for (const c of [
      'candidate:a 1 udp 1 127.0.0.1 5 typ host',
      'candidate:a 1 udp 1 10.0.0.5 5 typ srflx raddr 0.0.0.0 rport 0',
      'candidate:a 1 tcp 1 10.0.0.5 5 typ host tcptype passive',
      'candidate:a 1 udp 1 fe80::1 5 typ host',
      'candidate:a 1 udp 1 203.0.113.7 5 typ host',
    ]) {
      expect(publicIpCandidate(c, '203.0.113.7')).toBeUndefined();
    }
  });
});

describe('advertisePublicIp', () => {
  const sdp = ['v=0', 'm=video 9 UDP/TLS/RTP/SAVPF 96', 'a=candidate:f1 1 udp 9 127.0.0.1 4000 typ host', 'a=candidate:f2 1 udp 9 10.1.2.3 4001 typ host', 'a=end-of-candidates', ''].join('\r\n');

  it('adds the twin right after each qualifying candidate', () => {
    expect(advertisePublicIp(sdp, '198.51.100.1')).toBe(
      ['v=0', 'm=video 9 UDP/TLS/RTP/SAVPF 96', 'a=candidate:f1 1 udp 9 127.0.0.1 4000 typ host', 'a=candidate:f2 1 udp 9 10.1.2.3 4001 typ host', 'a=candidate:pf2 1 udp 8 198.51.100.1 4001 typ host', 'a=end-of-candidates', ''].join('\r\n'),
    );
  });

  it('changes nothing when werift already gathered the public address', () => {
    const bound = sdp.replace('10.1.2.3', '198.51.100.1');
    expect(advertisePublicIp(bound, '198.51.100.1')).toBe(bound);
  });
});
