import { describe, expect, it } from 'vitest';
import { clientBlock, embeddedIpv4, expandIpv6 } from './ip-address';

describe('clientBlock', () => {
  it.each([
    ['203.0.113.5', '203.0.113.5'],
    ['::ffff:203.0.113.5', '203.0.113.5'],
    ['::ffff:cb00:7105', '203.0.113.5'],
    ['2a01:4f8:c0c:1::1', '2a01:4f8:c0c:1::/64'],
    ['2A01:04F8:0C0C:0001:FFFF:1:2:3', '2a01:4f8:c0c:1::/64'],
    ['fe80::1%eth0', 'fe80:0:0:0::/64'],
    ['::1', '0:0:0:0::/64'],
    ['not an address', 'not an address'],
  ])('%s is counted as %s', (address, block) => {
    expect(clientBlock(address)).toBe(block);
  });
});

describe('IPv6 words', () => {
  it('expands :: in any position and refuses too many words', () => {
    expect(expandIpv6('2001:db8::1')).toEqual([0x2001, 0xdb8, 0, 0, 0, 0, 0, 1]);
    expect(expandIpv6('::')).toEqual([0, 0, 0, 0, 0, 0, 0, 0]);
    expect(expandIpv6('1:2:3:4:5:6:7:8:9')).toBeUndefined();
    expect(embeddedIpv4('64:ff9b::c000:221')).toBe('192.0.2.33');
    expect(embeddedIpv4('2001:db8::1')).toBeUndefined();
  });
});
