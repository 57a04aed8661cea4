// The WinSW XML, parsed back with a real XML parser: every element WinSW reads is there with the
// value the service needs, text that needs escaping survives the round trip.
import { DOMParser, type Element } from '@xmldom/xmldom';
import { describe, expect, it } from 'vitest';
import { parseServiceAccount } from './service-account';
import { serviceSpec } from './service-plan';
import { LOG_KEEP_FILES, LOG_ROLL_SIZE_KIB, renderWinswXml, windowsArgument } from './winsw-xml';

const layout = { installDir: 'C:\\Program Files\\Pixelfleet\\agent', stateDir: 'C:\\ProgramData\\Pixelfleet\\agent' };

function parse(xml: string): Element {
  const doc = new DOMParser({ onError: (level, msg) => { throw new Error(`${level}: ${msg}`); } }).parseFromString(xml, 'text/xml');
  return doc.documentElement!;
}

function children(root: Element): Element[] {
  const out: Element[] = [];
  for (let n = root.firstChild; n !== null; n = n.nextSibling) if (n.nodeType === 1) out.push(n as Element);
  return out;
}

function text(root: Element, tag: string): string {
  const found = children(root).filter((e) => e.tagName === tag);
  expect(found, tag).toHaveLength(1);
  return found[0]!.textContent ?? '';
}

describe('renderWinswXml', () => {
  it('writes every element of the service, parsed back', () => {
    const root = parse(renderWinswXml(serviceSpec(layout, parseServiceAccount(undefined))));
    expect(root.tagName).toBe('service');
    expect(children(root).map((e) => e.tagName)).toEqual([
      'id', 'name', 'description', 'executable', 'arguments', 'workingdirectory', 'startmode', 'delayedAutoStart',
      'onfailure', 'onfailure', 'onfailure', 'resetfailure', 'stoptimeout', 'stopparentprocessfirst', 'logpath', 'log', 'env',
    ]);
    expect(text(root, 'id')).toBe('pixelfleet-agent');
    expect(text(root, 'name')).toBe('Pixelfleet Agent');
    expect(text(root, 'description')).toMatch(/^Pixelfleet agent: /);
    expect(text(root, 'executable')).toBe('C:\\Program Files\\Pixelfleet\\agent\\node.exe');
    expect(text(root, 'arguments')).toBe('--enable-source-maps "C:\\Program Files\\Pixelfleet\\agent\\agent.cjs" run --config C:\\ProgramData\\Pixelfleet\\agent\\agent.json');
    expect(text(root, 'workingdirectory')).toBe('C:\\ProgramData\\Pixelfleet\\agent');
    expect(text(root, 'startmode')).toBe('Automatic');
    expect(text(root, 'delayedAutoStart')).toBe('true');
    // Back-off: the last action repeats for every later failure.
    expect(children(root).filter((e) => e.tagName === 'onfailure').map((e) => [e.getAttribute('action'), e.getAttribute('delay')])).toEqual([
      ['restart', '10 sec'],
      ['restart', '30 sec'],
      ['restart', '60 sec'],
    ]);
    expect(text(root, 'resetfailure')).toBe('1 hour');
    expect(text(root, 'stoptimeout')).toBe('60 sec');
    expect(text(root, 'stopparentprocessfirst')).toBe('true');
    expect(text(root, 'logpath')).toBe('C:\\ProgramData\\Pixelfleet\\agent\\logs');
    const log = children(root).find((e) => e.tagName === 'log')!;
    expect(log.getAttribute('mode')).toBe('roll-by-size');
    expect(text(log, 'sizeThreshold')).toBe(String(LOG_ROLL_SIZE_KIB));
    expect(text(log, 'keepFiles')).toBe(String(LOG_KEEP_FILES));
    const env = children(root).find((e) => e.tagName === 'env')!;
    expect([env.getAttribute('name'), env.getAttribute('value')]).toEqual(['NODE_ENV', 'production']);
  });

  it.each([
    ['LocalService', 'NT AUTHORITY', 'LocalService', false],
    ['networkservice', 'NT AUTHORITY', 'NetworkService', false],
    ['NT SERVICE\\pixelfleet-agent', 'NT SERVICE', 'pixelfleet-agent', false],
    ['CORP\\gpu-agents$', 'CORP', 'gpu-agents$', true],
  ])('names the service account %s', (flag, domain, user, allowLogon) => {
    const root = parse(renderWinswXml(serviceSpec(layout, parseServiceAccount(flag))));
    const account = children(root).find((e) => e.tagName === 'serviceaccount')!;
    expect(children(account).map((e) => e.tagName)).toEqual(allowLogon ? ['domain', 'user', 'allowservicelogon'] : ['domain', 'user']);
    expect(text(account, 'domain')).toBe(domain);
    expect(text(account, 'user')).toBe(user);
    if (allowLogon) expect(text(account, 'allowservicelogon')).toBe('true');
  });

  it('escapes markup and quotes in paths and environment values', () => {
    const spec = { ...serviceSpec({ installDir: 'D:\\R&D <agents>', stateDir: 'D:\\state "x"' }, parseServiceAccount(undefined)), environment: [['A"B', '<&"\'>']] as const };
    const root = parse(renderWinswXml(spec));
    expect(text(root, 'executable')).toBe('D:\\R&D <agents>\\node.exe');
    expect(text(root, 'workingdirectory')).toBe('D:\\state "x"');
    const env = children(root).find((e) => e.tagName === 'env')!;
    expect([env.getAttribute('name'), env.getAttribute('value')]).toEqual(['A"B', '<&"\'>']);
  });

  it('refuses control characters, which XML 1.0 cannot carry', () => {
    expect(() => renderWinswXml({ ...serviceSpec(layout, parseServiceAccount(undefined)), description: 'a\u0001b' })).toThrow(/control character/);
  });
});

describe('windowsArgument', () => {
  it.each([
    ['run', 'run'],
    ['C:\\Program Files\\x', '"C:\\Program Files\\x"'],
    ['', '""'],
    ['say "hi"', '"say \\"hi\\""'],
    ['C:\\dir with space\\', '"C:\\dir with space\\\\"'],
  ])('quotes %j as %s', (arg, quoted) => {
    expect(windowsArgument(arg)).toBe(quoted);
  });
});
