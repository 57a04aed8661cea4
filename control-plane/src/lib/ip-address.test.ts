import { describe, expect, it } from 'vitest';
import { clientBlock, embeddedIpv4, expandIpv6, isNonPublicAddress } from './ip-address';

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

describe('isNonPublicAddress', () => {
  it.each([
    ['127.0.0.1', true],
    ['10.0.0.1', true],
    ['172.31.255.255', true],
    ['192.168.0.1', true],
    ['169.254.169.254', true],
    ['100.64.0.1', true],
    ['224.0.0.251', true],
    ['255.255.255.255', true],
    ['0.0.0.0', true],
    ['::', true],
    ['::1', true],
    ['fd12:3456::1', true],
    ['fe80::1', true],
    ['ff02::1', true],
    ['::ffff:127.0.0.1', true],
    ['::ffff:7f00:1', true],
    ['64:ff9b::7f00:1', true],
    ['::ffff:0:127.0.0.1', true],
    ['::ffff:0:a00:1', true],
    ['64:ff9b:1::5db8:d822', true],
    ['2002:c0a8:0101::1', true],
    ['192.88.99.1', true], // 6to4 relay anycast
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', true], // Teredo
    ['2001:2::1', true], // benchmarking
    ['2001:20::1', true], // ORCHIDv2
    ['3fff::1', true], // documentation (RFC 9637)
    ['5f00::1', true], // SRv6 SIDs
    ['not-an-ip', true],
    ['93.184.216.34', false],
    ['8.8.8.8', false],
    ['2606:2800:220:1:248:1893:25c8:1946', false],
    ['2001:4860:4860::8888', false], // 2001:4860::/32 is outside 2001::/23
    ['192.88.98.1', false],
    ['::ffff:93.184.216.34', false],
    ['::ffff:0:93.184.216.34', false],
  ])('%s → %s', (address, expected) => {
    expect(isNonPublicAddress(address)).toBe(expected);
  });
});
