// docs/operations.md checked against the code, so the guide cannot drift from what it describes:
// every warn/error/fatal log message of the control plane and the agent is named in it (a new
// warning cannot land undocumented), every config key it names exists in a config schema, its JSON
// examples load through the real loaders, and every `pixelfleet …` / `pixelfleet-agent …` command
// it shows exists (`--help` exits 0) with the flags it uses.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { loadControlPlaneConfig } from '@pixelfleet/control-plane';
import { loadAgentConfig } from '@pixelfleet/agent';
import { AGENT_BIN, PIXELFLEET_BIN, REPO_ROOT, cleanEnv } from '../support/cli-process';

const GUIDE = readFileSync(join(REPO_ROOT, 'docs/operations.md'), 'utf8');
/** The folders whose log lines reach an operator: the two processes and the shared package (SampledLog writes its callers' lines; signaling/src and proto/src log nothing themselves). */
const LOGGING_SOURCES = ['control-plane/src', 'agent/src', 'common/src'];

// ---------------------------------------------------------------------------------------------
// Log messages
// ---------------------------------------------------------------------------------------------

/** Every call site of a warn, error or fatal log method (pino: `log.warn(…)`, `req.log.error(…)`). */
const LOG_CALL = /\.(?:warn|error|fatal)\(/g;
/**
 * A call with a literal message, pino's two shapes: `.warn('message')` and `.warn(fields, 'message')`,
 * where fields is an object literal (no `;` inside, so the match cannot run into the next statement)
 * or a plain name. The message is a '…', "…" or `…` string; of a template only the text before its
 * first `${` is kept. Calls may span lines and end with a trailing comma.
 */
const LITERAL_LOG_CALL = /\.(?:warn|error|fatal)\(\s*(?:(?:\{[^;]*?\}|[A-Za-z_$][\w$.]*)\s*,\s*)?(['"`])((?:\\.|(?!\1)[^\\])*)\1\s*,?\s*\)/g;
/** Any string literal, for the indirect messages below (same quoting rules). */
const STRING_LITERAL = /(['"`])((?:\\.|(?!\1)[^\\])*)\1/g;

/** The message an operator sees for a literal; of a template only its static head, matched as a prefix. */
function messageOf(quote: string, body: string): { message: string; prefix: boolean } {
  const head = quote === '`' ? body.split('${')[0]! : body;
  return { message: head.replace(/\\(.)/g, '$1'), prefix: head !== body };
}

/**
 * Call sites whose message is not a literal at the call: each names where its messages are written
 * instead (found with `messages`, whose first group holds one or more string literals), or none
 * when the call is not a log line. A new such call fails the test until it is listed here.
 */
const INDIRECT: { file: string; call: RegExp; sources: string[]; messages?: RegExp; why: string }[] = [
  {
    file: 'control-plane/src/share/viewer-gateway.ts',
    call: /^\.warn\(\{ projectId, address \}, why\)/,
    sources: ['control-plane/src/share/viewer-gateway.ts'],
    messages: /turnAway\([^,]+,\s*('[^']+')\)/g,
    why: 'turnAway(close, message) logs the message and closes the socket',
  },
  {
    file: 'agent/src/logs/log-spool.ts',
    call: /^\.warn\(\s*\{ sessionId: entry\.manifest\.sessionId/,
    sources: ['agent/src/logs/log-spool.ts'],
    messages: /tooOld \? ('[^']+' : '[^']+')/g,
    why: 'one call, two messages (too old, or the spool too large)',
  },
  {
    file: 'agent/src/main.ts',
    call: /^\.error\(err\.message\)/,
    sources: ['agent/src/agent.ts', 'agent/src/link/control-link.ts'],
    messages: /new EnrollRefusedError\((.*)\);?$/gm,
    why: 'an EnrollRefusedError ends `run` with exit 77, its message logged',
  },
  { file: 'agent/src/bundle-main.ts', call: /^\.error\(err\)/, sources: [], why: "console.error: not a log line but the bundle's last-resort crash print to stderr" },
  {
    file: 'common/src/sampled-log.ts',
    call: /^\.warn\(\{ \.\.\.fields, count/,
    sources: [],
    why: "SampledLog writes the messages of its callers' `.for(peer).warn(fields, 'message')` calls, each found where it is made",
  },
  {
    file: 'control-plane/src/grpc/credential-failures.ts',
    call: /^\.warn\(\{ peer, address, \.\.\.fields \}, (TOO_MANY_FAILURES_MESSAGE|message)\)/,
    sources: ['control-plane/src/grpc/credential-failures.ts', 'control-plane/src/grpc/agent-service.ts', 'control-plane/src/grpc/admin-service.ts'],
    messages: /(?:TOO_MANY_FAILURES_MESSAGE = |credentialFailures\.failed\(peer, )('[^']+')/g,
    why: 'a failed credential check logs the message its service passes (failed(peer, message, fields)), and a refused one TOO_MANY_FAILURES_MESSAGE',
  },
];

interface LogMessage {
  message: string;
  /** true for a template's head: the guide shows it followed by what the template fills in. */
  prefix: boolean;
  where: string;
}

/** The production sources under dir: no tests, no test-support (fakes that never run in a deployment). */
function sourceFiles(dir: string): string[] {
  return readdirSync(join(REPO_ROOT, dir), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts') && !f.endsWith('.d.ts') && !f.includes('test-support'))
    .map((f) => join(dir, f));
}

/** The log messages of one source text, and the call sites that have no literal message. */
function extractFromSource(text: string): { messages: { message: string; prefix: boolean }[]; others: { index: number; text: string }[] } {
  const literalAt = new Map<number, { message: string; prefix: boolean }>();
  for (const m of text.matchAll(LITERAL_LOG_CALL)) literalAt.set(m.index, messageOf(m[1]!, m[2]!));
  const messages: { message: string; prefix: boolean }[] = [];
  const others: { index: number; text: string }[] = [];
  for (const m of text.matchAll(LOG_CALL)) {
    const message = literalAt.get(m.index);
    if (message !== undefined) messages.push(message);
    else others.push({ index: m.index, text: text.slice(m.index, text.indexOf('\n', m.index)) });
  }
  return { messages, others };
}

function extractLogMessages(): { messages: LogMessage[]; callSites: number; unlisted: string[]; unused: string[] } {
  const messages: LogMessage[] = [];
  const unlisted: string[] = [];
  const used = new Set<(typeof INDIRECT)[number]>();
  let callSites = 0;
  for (const file of LOGGING_SOURCES.flatMap(sourceFiles)) {
    const text = readFileSync(join(REPO_ROOT, file), 'utf8');
    const found = extractFromSource(text);
    callSites += found.messages.length + found.others.length;
    messages.push(...found.messages.map((m) => ({ ...m, where: file })));
    for (const other of found.others) {
      const entry = INDIRECT.find((e) => e.file === file.split('\\').join('/') && e.call.test(text.slice(other.index, other.index + 400)));
      if (entry === undefined) {
        unlisted.push(`${file}: ${other.text}`);
        continue;
      }
      used.add(entry);
      if (entry.messages === undefined) continue;
      for (const source of entry.sources) {
        for (const m of readFileSync(join(REPO_ROOT, source), 'utf8').matchAll(entry.messages)) {
          for (const lit of m[1]!.matchAll(STRING_LITERAL)) messages.push({ ...messageOf(lit[1]!, lit[2]!), where: source });
        }
      }
    }
  }
  const unused = INDIRECT.filter((e) => !used.has(e)).map((e) => `${e.file}: ${e.call.source}`);
  return { messages, callSites, unlisted, unused };
}

/** Every `code span` of the guide (a span may wrap onto the next line). */
const codeSpans = (markdown: string) => [...markdown.replace(/```[\s\S]*?```/g, '').matchAll(/`([^`]+)`/g)].map((m) => m[1]!.replace(/\s*\n\s*/g, ' ').trim());

describe('log message extraction', () => {
  it('finds the message of each shape of call, and reports the calls without a literal', () => {
    const sample = [
      "log.warn('plain message');",
      "this.log.error({ err, sessionId }, 'with fields; and a semicolon');",
      'this.log.warn(\n  { a: 1, b: { c: 2 } },\n  "spread over lines",\n);',
      'log.warn(fields, `template ${x} tail`);',
      'req.log.fatal({ ...(x ? {} : { y }) }, "after a spread");',
      'this.deps.log.warn({ projectId }, why);',
      'log.info({ a }, "not a warning");',
    ].join('\n');
    const found = extractFromSource(sample);
    expect(found.messages.map((m) => (m.prefix ? `${m.message}…` : m.message))).toEqual(['plain message', 'with fields; and a semicolon', 'spread over lines', 'template …', 'after a spread']);
    expect(found.others.map((o) => o.text)).toEqual(['.warn({ projectId }, why);']);
  });
});

describe('docs/operations.md', () => {
  it('names every warn/error/fatal log message of the control plane and the agent', () => {
    const { messages, callSites, unlisted, unused } = extractLogMessages();
    expect(unlisted, 'log calls without a literal message: list each in INDIRECT with where its messages come from').toEqual([]);
    expect(unused, 'INDIRECT entries that match no call any more: remove them').toEqual([]);
    // The extraction must keep finding what is there: at this writing 117 call sites and 121
    // messages. Far fewer means the pattern has stopped matching, not that the code got quieter.
    expect(callSites).toBeGreaterThanOrEqual(100);
    expect(messages.length).toBeGreaterThanOrEqual(100);
    expect(messages.filter((m) => m.where.startsWith('control-plane/')).length).toBeGreaterThanOrEqual(40);
    expect(messages.filter((m) => m.where.startsWith('agent/')).length).toBeGreaterThanOrEqual(50);
    for (const { message } of messages) expect(message.length, `a message this short cannot be looked up: ${JSON.stringify(message)}`).toBeGreaterThanOrEqual(6);

    // Named means: a code span of the guide that is the message (for a template's head: starts with it).
    const spans = codeSpans(GUIDE);
    const named = ({ message, prefix }: LogMessage) => spans.some((s) => s === message || (prefix && s.startsWith(message)));
    const missing = [...new Set(messages.filter((m) => !named(m)).map((m) => `${m.where}: ${m.message}${m.prefix ? '…' : ''}`))];
    expect(missing, 'log messages missing from docs/operations.md section 9 (add each, in backticks, with its meaning and what to do)').toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------
// Config keys
// ---------------------------------------------------------------------------------------------

/**
 * A control plane config with every section the guide talks about, loaded (so validated, strictly:
 * an unknown key is an error) before use: a key is real when it is a path in here or in FULL_AGENT.
 * A key the guide needs that is missing here is added here, and the loader then proves it exists.
 */
const FULL_CONTROL_PLANE = {
  http: { host: '127.0.0.1', port: 8080, trustProxy: ['loopback'], tls: { certFile: '/c.pem', keyFile: '/k.pem' }, insecure: false },
  grpc: { host: '0.0.0.0', port: 50051, tls: { certFile: '/c.pem', keyFile: '/k.pem', clientCaFile: '/ca.pem' }, insecure: false },
  dataDir: '/var/lib/pixelfleet',
  adminToken: 'admin-0123456789abcdefghijklmnopqrstuv',
  agentJoinToken: 'join-0123456789abcdefghijklmnopqrstuv',
  publicUrls: { api: 'https://x.example/api', platform: 'https://x.example', share: 'https://x.example/share', agents: 'https://x.example' },
  network: { allowPrivateUrls: false, allowPrivateViewerCandidates: false },
  limits: { buildCallWindowSeconds: 120, analyticsReadsPerMinute: 300, fairUseBurst: 60, fairUsePerSecond: 5, fairUseAddressBurst: 240, fairUseAddressPerSecond: 20, telemetryBytesPerSession: 4194304, telemetryBytesWhileQueued: 65536, telemetryAddressBytesBurst: 2097152, telemetryAddressBytesPerSecond: 65536, maxBuildBytes: 1024 },
  downloads: { maxAttempts: 5, retryBaseMs: 1000, retryMaxMs: 30000, stallTimeoutSeconds: 60 },
  distribution: { linkTtlSeconds: 3600, deadlineSeconds: 3600 },
  workers: { heartbeatIntervalSeconds: 10, leaseSeconds: 30, lostGraceSeconds: 120 },
  viewers: { resumeGraceSeconds: 30, maxPerAddress: 20, maxQueuedPerProject: 500, sessionsPerMinute: 10, sessionBurst: 20 },
  sessions: { connectTimeoutSeconds: 120 },
  metrics: { bearerToken: 'metrics-0123456789abcdefghijklmnopqrs' },
  retention: { sessionDays: 100, logDays: 30, telemetryDays: 92, sweepIntervalMinutes: 60 },
  geoip: { enabled: false },
  turn: { secret: 'turn-0123456789abcdefghijklmnopqrstuv', urls: ['turn:turn.example.com:3478'], ttlSeconds: 86400 },
  mail: { smtp: { url: 'smtps://pixelfleet:secret@mail.example.com:465' }, from: 'Pixelfleet <noreply@x.example>', outboxDir: '/var/lib/pixelfleet/outbox' },
  blobs: {
    s3: { endpoint: 'https://s3.x.example', bucket: 'pixelfleet-blobs', region: 'us-east-1', accessKeyId: 'AKID', secretAccessKey: 'secret-key', forcePathStyle: true, prefix: 'pixelfleet/', partSizeMiB: 16, uploadConcurrency: 4, presignSeconds: 300, insecure: false },
  },
  logLevel: 'info',
};
/** The agent's counterpart of FULL_CONTROL_PLANE. */
const FULL_AGENT = {
  controlPlane: 'x.example:50051',
  tls: { caFile: '/ca.pem', serverName: 'x.example', certFile: '/c.pem', keyFile: '/k.pem' },
  joinToken: 'join-0123456789abcdefghijklmnopqrstuv',
  region: 'europe',
  slots: 1,
  hostname: 'gpu-1',
  dataDir: '/data',
  publicIp: '203.0.113.10',
  ice: { hostAddresses: ['10.0.0.5'], portRange: { min: 40000, max: 49999 }, iceServers: [{ urls: 'stun:stun.example.com' }] },
  launcher: { command: ['wine'] },
  buildCache: { maxBytes: 1024, insecureDownloads: true },
  logSpool: { maxBytes: 1024, maxAgeHours: 168 },
  logLevel: 'info',
};
/** tls.insecure cannot go with the other tls keys: its own full config. */
const FULL_AGENT_PLAINTEXT = { ...FULL_AGENT, tls: { insecure: true } };

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'pf-ops-guide-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function loadAgentObject(dir: string, config: unknown, name: string) {
  const file = join(dir, name);
  writeFileSync(file, JSON.stringify(config));
  return loadAgentConfig({ file, env: {} });
}

const hasPath = (config: unknown, path: string[]): boolean => {
  let node = config;
  for (const segment of path) {
    if (typeof node !== 'object' || node === null || !Object.hasOwn(node, segment)) return false;
    node = (node as Record<string, unknown>)[segment];
  }
  return true;
};

/** Dotted code spans that are not config keys: file names (by their extension) and fleet event names (`admin events`). */
const FILE_EXTENSIONS = new Set(['cjs', 'com', 'conf', 'crt', 'exe', 'json', 'key', 'mjs', 'pem', 'service', 'sqlite', 'sysusers', 'xml', 'zip']);
const FLEET_EVENTS = new Set(['worker.enrolled', 'worker.connected', 'worker.disconnected', 'worker.unreachable', 'worker.identityConflict', 'warmPool.stopped']);
const DOTTED_KEY = /^[a-z][A-Za-z0-9]*(?:\.[a-z][A-Za-z0-9]*)+$/;

describe('docs/operations.md config keys', () => {
  it('every dotted key and every key in a "Key" table exists in the control plane or agent config', () => {
    const dir = tempDir();
    // Both full configs load: every path in them is a key of the schema.
    expect(() => loadControlPlaneConfig({ overrides: FULL_CONTROL_PLANE, env: {} })).not.toThrow();
    expect(() => loadAgentObject(dir, FULL_AGENT, 'full-agent.json')).not.toThrow();
    expect(() => loadAgentObject(dir, FULL_AGENT_PLAINTEXT, 'plaintext-agent.json')).not.toThrow();
    // The full configs are not a free pass: an unknown key in either is refused by its loader.
    expect(() => loadControlPlaneConfig({ overrides: { ...FULL_CONTROL_PLANE, grpc: { ...FULL_CONTROL_PLANE.grpc, tlss: {} } }, env: {} })).toThrow(/unknown config key "grpc.tlss"/);
    expect(() => loadAgentObject(dir, { ...FULL_AGENT, tls: { ...FULL_AGENT.tls, cafile: 'x' } }, 'bad-agent.json')).toThrow(/unknown config key "tls.cafile"/);

    // The event names set aside are the control plane's own (each recorded somewhere in its sources).
    const controlPlaneSource = sourceFiles('control-plane/src').map((f) => readFileSync(join(REPO_ROOT, f), 'utf8')).join('\n');
    for (const name of FLEET_EVENTS) expect(controlPlaneSource, `fleet event ${name}`).toContain(`'${name}'`);
    const dotted = codeSpans(GUIDE).filter((s) => DOTTED_KEY.test(s) && !FILE_EXTENSIONS.has(s.slice(s.lastIndexOf('.') + 1)) && !FLEET_EVENTS.has(s));
    // Tables whose first header cell is "Key": their first column names keys.
    const tableKeys: string[] = [];
    let inKeyTable = false;
    for (const line of GUIDE.split('\n')) {
      if (!line.startsWith('|')) inKeyTable = false;
      else if (/^\|\s*Key\s*\|/.test(line)) inKeyTable = true;
      else if (inKeyTable && !/^\|[-\s|]+\|$/.test(line)) tableKeys.push(/^\|\s*`([^`]+)`/.exec(line)?.[1] ?? `(row without a key) ${line}`);
    }
    expect(dotted.length, 'dotted keys found in the guide').toBeGreaterThanOrEqual(30);
    expect(tableKeys.length, 'keys found in "Key" tables').toBeGreaterThanOrEqual(10);
    const unknown = [...new Set([...dotted, ...tableKeys])].filter((key) => !hasPath(FULL_CONTROL_PLANE, key.split('.')) && !hasPath(FULL_AGENT, key.split('.')) && !hasPath(FULL_AGENT_PLAINTEXT, key.split('.')));
    expect(unknown, 'keys the guide names that neither config has').toEqual([]);
  });

  it('its JSON examples load through the real loaders', () => {
    const dir = tempDir();
    const blocks = [...GUIDE.matchAll(/```json\n([\s\S]*?)```/g)].map((m) => m[1]!);
    expect(blocks.length).toBeGreaterThanOrEqual(2);
    // The sample as an operator fills it in: its placeholder secrets replaced, as the guide says.
    const secret = () => randomBytes(32).toString('hex');
    const sample = { ...(JSON.parse(readFileSync(join(REPO_ROOT, 'deploy/control-plane.example.json'), 'utf8')) as Record<string, unknown>), adminToken: secret(), agentJoinToken: secret(), metrics: { bearerToken: secret() } };
    for (const [i, block] of blocks.entries()) {
      // A whole config starts with `{`; a fragment (`"turn": {…}`) goes into the sample control plane config.
      const value = JSON.parse(block.trim().startsWith('{') ? block : `{${block}}`) as Record<string, unknown>;
      if ('controlPlane' in value) loadAgentObject(dir, value, `agent-${i}.json`);
      else loadControlPlaneConfig({ overrides: { ...sample, ...value }, env: {} });
    }
  });
});

// ---------------------------------------------------------------------------------------------
// Commands
// ---------------------------------------------------------------------------------------------

/**
 * A command the guide shows: the program (`pixelfleet`, `pixelfleet-agent`, or the agent bundle
 * `agent.cjs`, as on Windows), the sub-command words after it, and its `--flags`.
 */
interface GuideCommand {
  bin: string;
  words: string[];
  flags: string[];
  text: string;
}

const PROGRAMS: Record<string, string> = { pixelfleet: PIXELFLEET_BIN, 'pixelfleet.mjs': PIXELFLEET_BIN, 'pixelfleet-agent': AGENT_BIN, 'agent.cjs': AGENT_BIN };
const INVOCATION = /(?:^|\s)(?:[^\s]*[/\\])?(pixelfleet-agent|pixelfleet\.mjs|pixelfleet|agent\.cjs)['"]?(?=\s)((?:[ \t]+[^\s|]+)*)/g;

function guideCommands(markdown: string): GuideCommand[] {
  const codeLines = [...markdown.matchAll(/```[a-z]*\n([\s\S]*?)```/g)].flatMap((m) => m[1]!.split('\n'));
  const commands: GuideCommand[] = [];
  for (const snippet of [...codeLines, ...codeSpans(markdown)]) {
    const text = snippet.split(' #')[0]!;
    for (const m of text.matchAll(INVOCATION)) {
      const tokens = m[2]!.trim().split(/\s+/).filter(Boolean);
      const words: string[] = [];
      for (const t of tokens) {
        if (!/^[a-z][a-z-]*$/.test(t)) break;
        words.push(t);
      }
      if (words.length === 0) continue; // `systemctl reload pixelfleet`, `-o pixelfleet`: the name, not the program
      const flags = tokens.filter((t) => /^--[a-z]/.test(t)).map((t) => t.replace(/[=,)].*$/, ''));
      commands.push({ bin: PROGRAMS[m[1]!]!, words, flags, text: m[0].trim() });
    }
  }
  return commands;
}

describe('docs/operations.md commands', () => {
  it('finds the commands of a guide, and leaves the service name alone', () => {
    const found = guideCommands(
      [
        '```sh',
        'npx pixelfleet admin worker drain --worker <workerId>     # then --json',
        'sudo systemctl reload pixelfleet',
        'sudo install -m 0600 -o pixelfleet -g pixelfleet pixelfleet-x.sqlite /var/lib/pixelfleet/pixelfleet.sqlite',
        '```',
        'Run `.\\node.exe agent.cjs service install --config C:\\setup\\agent.json --dry-run`, then',
        "`& 'C:\\Program Files\\Pixelfleet\\agent\\node.exe' 'C:\\Program Files\\Pixelfleet\\agent\\agent.cjs' doctor --config C:\\a.json`",
        '`/opt/pixelfleet/control-plane/bin/pixelfleet.mjs serve --config',
        '/etc/pixelfleet/control-plane.json`.',
      ].join('\n'),
    );
    expect(found.map((c) => [c.bin === PIXELFLEET_BIN ? 'pixelfleet' : 'agent', c.words.join(' '), c.flags.join(' ')])).toEqual([
      ['pixelfleet', 'admin worker drain', '--worker'],
      ['agent', 'service install', '--config --dry-run'],
      ['agent', 'doctor', '--config'],
      ['pixelfleet', 'serve', '--config'],
    ]);
  });

  it('every pixelfleet and pixelfleet-agent command it shows exists, with the flags it uses', () => {
    const commands = guideCommands(GUIDE);
    expect(commands.length, 'commands found in the guide').toBeGreaterThanOrEqual(20);
    const help = new Map<string, { status: number | null; out: string }>();
    const helpOf = (bin: string, words: string[]) => {
      const key = [bin, ...words].join(' ');
      let result = help.get(key);
      if (result === undefined) {
        const run = spawnSync(process.execPath, [bin, ...words, '--help'], { cwd: REPO_ROOT, env: cleanEnv(), encoding: 'utf8', timeout: 20_000 });
        result = { status: run.status, out: run.stdout + run.stderr };
        help.set(key, result);
      }
      return result;
    };
    const problems: string[] = [];
    for (const c of commands) {
      const own = helpOf(c.bin, c.words);
      if (own.status !== 0) {
        problems.push(`${c.text}: \`${relative(REPO_ROOT, c.bin)} ${c.words.join(' ')} --help\` exits ${own.status}: ${own.out.split('\n')[0]}`);
        continue;
      }
      // A flag is real when the command's help or its group's (`admin --help`: server, token, TLS) names it.
      const group = c.words[0] === 'admin' ? helpOf(c.bin, ['admin']).out : '';
      for (const flag of c.flags) if (!new RegExp(`${flag}(?![a-z-])`).test(own.out + group)) problems.push(`${c.text}: ${flag} is not an option of \`${c.words.join(' ')}\``);
    }
    expect(problems).toEqual([]);
    // The check reaches both programs and their groups.
    expect(new Set(commands.map((c) => `${c.bin === PIXELFLEET_BIN ? 'pixelfleet' : 'pixelfleet-agent'} ${c.words[0]}`))).toEqual(
      new Set(['pixelfleet serve', 'pixelfleet admin', 'pixelfleet-agent run', 'pixelfleet-agent doctor', 'pixelfleet-agent service']),
    );
  }, 120_000);
});
