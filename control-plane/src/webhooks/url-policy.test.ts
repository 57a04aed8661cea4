// The outbound URL policy with an injected resolver: no real DNS lookups of external names.
import { describe, expect, it, vi } from 'vitest';
import { DNS_TIMEOUT_MS, checkOutboundUrl, pinnedLookup, type HostResolver } from './url-policy';

const resolverOf =
  (table: Record<string, string[]>): HostResolver =>
  (host) =>
    table[host] ? Promise.resolve(table[host]) : Promise.reject(new Error('ENOTFOUND'));

const strict = (table: Record<string, string[]>) => ({ allowPrivateUrls: false, resolve: resolverOf(table) });

describe('checkOutboundUrl', () => {
  it('accepts a public https host when every resolved address is public', async () => {
    const verdict = await checkOutboundUrl('https://cdn.example.test/build.zip', strict({ 'cdn.example.test': ['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946'] }));
    // The checked addresses come back: a request must connect to these, not to a new DNS answer.
    expect(verdict).toMatchObject({ ok: true, addresses: ['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946'] });
  });

  it('refuses a host with any private address among its answers (DNS pinning to internal ranges)', async () => {
    const verdict = await checkOutboundUrl('https://mixed.example.test/b.zip', strict({ 'mixed.example.test': ['93.184.216.34', '10.0.0.5'] }));
    expect(verdict).toEqual({ ok: false, reason: 'must point to a public address (private, loopback and link-local addresses are refused)' });
  });

  it('refuses unresolvable hosts, http, credentials and over-long URLs', async () => {
    expect(await checkOutboundUrl('https://nowhere.example.test/b.zip', strict({}))).toEqual({ ok: false, reason: 'host nowhere.example.test could not be resolved' });
    expect(await checkOutboundUrl('http://cdn.example.test/b.zip', strict({ 'cdn.example.test': ['93.184.216.34'] }))).toEqual({ ok: false, reason: 'must be an https URL' });
    expect(await checkOutboundUrl('https://u:p@cdn.example.test/b.zip', strict({ 'cdn.example.test': ['93.184.216.34'] }))).toEqual({ ok: false, reason: 'must not carry credentials' });
    expect(await checkOutboundUrl(`https://cdn.example.test/${'a'.repeat(3000)}`, strict({}))).toEqual({ ok: false, reason: 'must be at most 2048 characters' });
  });

  it('refuses a host whose name does not resolve within the DNS timeout (5 s by default), and forgets the late answer', async () => {
    vi.useFakeTimers();
    try {
      let answer: ((addresses: string[]) => void) | undefined;
      const hanging: HostResolver = () => new Promise((resolve) => (answer = resolve));
      const verdict = checkOutboundUrl('https://slow.example.test/b.zip', { allowPrivateUrls: false, resolve: hanging });
      await vi.advanceTimersByTimeAsync(DNS_TIMEOUT_MS - 1);
      let settled = false;
      void verdict.then(() => (settled = true));
      await vi.advanceTimersByTimeAsync(0);
      expect(settled).toBe(false);
      await vi.advanceTimersByTimeAsync(1);
      expect(await verdict).toEqual({ ok: false, reason: 'host slow.example.test did not resolve within 5 s' });
      answer!(['93.184.216.34']); // too late: changes nothing
      expect(vi.getTimerCount()).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });

  it('allows http and private addresses when allowPrivateUrls is set, but never other schemes', async () => {
    const open = { allowPrivateUrls: true, resolve: resolverOf({}) };
    expect((await checkOutboundUrl('http://127.0.0.1:8080/b.zip', open)).ok).toBe(true);
    expect(await checkOutboundUrl('file:///etc/passwd', open)).toEqual({ ok: false, reason: 'must be an http(s) URL' });
  });
});

describe('pinnedLookup', () => {
  const ask = (addresses: string[], options: { all?: boolean; family?: number }) =>
    new Promise<unknown>((resolve) => {
      let sync = true;
      pinnedLookup(addresses)('cdn.example.test', options, (err, address, family) => resolve({ err: err?.message, address, family, sync }));
      sync = false;
    });

  it('answers with the checked addresses only, on a later tick (tls fails on a same-tick answer)', async () => {
    const checked = ['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946'];
    expect(await ask(checked, { all: true })).toEqual({
      err: undefined,
      address: [
        { address: '93.184.216.34', family: 4 },
        { address: '2606:2800:220:1:248:1893:25c8:1946', family: 6 },
      ],
      family: undefined,
      sync: false,
    });
    expect(await ask(checked, { family: 6 })).toEqual({ err: undefined, address: '2606:2800:220:1:248:1893:25c8:1946', family: 6, sync: false });
    expect(await ask(['93.184.216.34'], { family: 6 })).toMatchObject({ err: 'no checked address of cdn.example.test for this family' });
  });
});
