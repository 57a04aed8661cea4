// deploy/coturn/turnserver.conf and deploy/agent.example.json agree: the streaming server's public
// address in the agent sample (publicIp) is a peer the sample coturn relays to. An operator who
// copies both must not get a TURN server that answers 403 to every relay-only viewer. The ranges
// are read as coturn reads them (denied-peer-ip / allowed-peer-ip, one address or first-last,
// IPv4 or IPv6; an allowed range wins over a denied one).
import { readFileSync } from 'node:fs';
import { isIPv4, isIPv6 } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../support/cli-process';

const CONF = join(REPO_ROOT, 'deploy/coturn/turnserver.conf');
const AGENT_SAMPLE = join(REPO_ROOT, 'deploy/agent.example.json');

interface Range {
  family: 4 | 6;
  first: bigint;
  last: bigint;
  text: string;
}

/** An address as a number of its family (IPv6 with `::` expanded, an embedded IPv4 tail included). */
function addressValue(address: string): { family: 4 | 6; value: bigint } {
  if (isIPv4(address)) return { family: 4, value: address.split('.').reduce((n, octet) => (n << 8n) + BigInt(octet), 0n) };
  if (!isIPv6(address)) throw new Error(`not an IP address: ${address}`);
  let text = address;
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4) {
    const n = addressValue(v4[1]!).value;
    text = `${text.slice(0, -v4[1]!.length)}${(n >> 16n).toString(16)}:${(n & 0xffffn).toString(16)}`;
  }
  const [head, tail] = text.split('::') as [string, string | undefined];
  const groups = (part: string | undefined) => (part === undefined || part === '' ? [] : part.split(':'));
  const left = groups(head);
  const right = groups(tail);
  const all = tail === undefined ? left : [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  if (all.length !== 8) throw new Error(`not an IPv6 address: ${address}`);
  return { family: 6, value: all.reduce((n, g) => (n << 16n) + BigInt(parseInt(g, 16)), 0n) };
}

/** Every `<key>=<address>` or `<key>=<first>-<last>` line of a coturn config (comments skipped). */
function ranges(conf: string, key: 'denied-peer-ip' | 'allowed-peer-ip'): Range[] {
  const out: Range[] = [];
  for (const raw of conf.split('\n')) {
    const line = raw.trim();
    if (!line.startsWith(`${key}=`)) continue;
    const text = line.slice(key.length + 1);
    const [firstText, lastText = firstText] = text.split('-') as [string, string | undefined];
    const first = addressValue(firstText);
    const last = addressValue(lastText);
    if (first.family !== last.family || first.value > last.value) throw new Error(`${key}=${text} is not a range coturn accepts`);
    out.push({ family: first.family, first: first.value, last: last.value, text });
  }
  return out;
}

function within(address: string, list: readonly Range[]): Range | undefined {
  const { family, value } = addressValue(address);
  return list.find((r) => r.family === family && r.first <= value && value <= r.last);
}

const conf = readFileSync(CONF, 'utf8');
const denied = ranges(conf, 'denied-peer-ip');
const allowed = ranges(conf, 'allowed-peer-ip');
/** What coturn decides for a peer: an allowed range wins over a denied one. */
const refused = (address: string) => within(address, allowed) === undefined && within(address, denied) !== undefined;

describe('the sample coturn config and the sample agent config', () => {
  it("relay to the sample agent's publicIp: it lies in no denied-peer-ip range", () => {
    const agent = JSON.parse(readFileSync(AGENT_SAMPLE, 'utf8')) as { publicIp?: string };
    expect(agent.publicIp).toBeDefined();
    const publicIp = agent.publicIp!;
    expect(isIPv4(publicIp) || isIPv6(publicIp)).toBe(true);
    expect(within(publicIp, denied)?.text, `turnserver.conf denies ${publicIp} (the agent sample's publicIp)`).toBeUndefined();
    expect(refused(publicIp)).toBe(false);
  });

  it('the TURN server sample address (external-ip) is a public-looking documentation address, not a denied one either', () => {
    const external = /^# external-ip=([^/\s]+)\//m.exec(conf)?.[1];
    expect(external).toBeDefined();
    expect(refused(external!)).toBe(false);
    const agent = JSON.parse(readFileSync(AGENT_SAMPLE, 'utf8')) as { publicIp: string };
    // Two machines, two addresses: the samples do not suggest the TURN server is the streaming server.
    expect(external).not.toBe(agent.publicIp);
  });

  it('are read as coturn reads them: private, loopback, link-local and mapped peers are refused, a public one is not', () => {
    // Enough ranges were read for the checks above to mean something.
    expect(denied.length).toBeGreaterThanOrEqual(15);
    for (const peer of ['10.0.0.5', '127.0.0.1', '169.254.1.1', '172.20.0.1', '192.168.1.10', '100.64.0.1', '0.0.0.0', '255.255.255.255', '::1', 'fe80::1', 'fd12:3456::1', '::ffff:10.0.0.5', '64:ff9b::a00:5']) {
      expect(refused(peer), peer).toBe(true);
    }
    for (const peer of ['8.8.8.8', '1.1.1.1', '2606:4700::1111', '2001:db8::10']) expect(refused(peer), peer).toBe(false);
  });
});
