// What an operator reads when the HTTP port is abused, on a real control plane: floods of
// malformed WebSocket frames are one warn line per socket (no stack) and each socket still gets its
// precise close code; requests refused before routing (raw bytes on a TCP socket) answer the
// service's `{ message }`; a secret pasted into a URL leaves no trace in the log.
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { Agent } from '@pixelfleet/agent';
import { startTestControlPlane, type TestControlPlane } from '../support/control-plane';
import { linkReaches, startTestAgent } from '../support/agent';
import { ScriptedSessions } from '../support/scripted-sessions';
import { seedProject } from '../support/seed';

let t: TestControlPlane;
let agent: Agent;
let projectId: string;
beforeAll(async () => {
  t = await startTestControlPlane();
  projectId = (await seedProject(t.cp)).projectId;
  await t.cp.registerLocalBuild(projectId);
  // A worker in the region, so that each viewer gets a session and its socket stays open.
  const script = new ScriptedSessions();
  agent = (await startTestAgent({ grpcAddress: t.started.grpcAddress, handlers: script.handlers, inventory: script.inventory, onSignal: script.onSignal })).agent;
  script.agent = agent;
  await linkReaches(agent, 'connected');
});
afterAll(async () => {
  await agent.close();
  await t.destroy();
});

interface LogLine {
  level: number;
  msg: string;
  [key: string]: unknown;
}
const logLines = (from: number): LogLine[] => t.logs.lines.slice(from).map((l) => JSON.parse(l) as LogLine);

/** Opens a viewer socket and waits for its session (so the socket is the gateway's, not a refused one). */
async function viewer(): Promise<{ socket: WebSocket; sessionId: string; closed: Promise<{ code: number; reason: string }> }> {
  const socket = new WebSocket(`${t.started.publicUrls.share.replace(/^http/, 'ws')}/${projectId}/signalling`);
  socket.on('error', () => undefined); // the server ends the connection after its close frame
  const closed = new Promise<{ code: number; reason: string }>((resolve) => socket.on('close', (code, reason) => resolve({ code, reason: reason.toString() })));
  const sessionId = await new Promise<string>((resolve, reject) => {
    socket.on('message', (data: Buffer) => {
      const m = JSON.parse(data.toString('utf8')) as { type: string; sessionId?: string };
      if (m.type === 'pixelfleetSession' && m.sessionId !== undefined) resolve(m.sessionId);
    });
    socket.once('close', () => reject(new Error('closed before its session')));
  });
  return { socket, sessionId, closed };
}

describe('malformed WebSocket frames', () => {
  const floods: [string, (socket: WebSocket) => void, number, string][] = [
    ['invalid UTF-8', (s) => s.send(Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d]), { binary: false }), 1007, 'invalid UTF-8 sequence'],
    ['over the 64 KiB maximum payload', (s) => s.send('x'.repeat(70_000)), 1009, 'Max payload size exceeded'],
    // ws refuses a message in more than 16384 fragments; each send below is one more fragment (300 × 60 in all).
    ['too many fragments', (s) => { for (let i = 0; i < 60; i++) s.send('x', { fin: false }); }, 1008, 'Too many message fragments'],
  ];

  it.each(floods)('a flood of frames with %s: one warn line without a stack for the socket, and its close code', async (_name, sendBad, code, reason) => {
    const from = t.logs.lines.length;
    const { socket, sessionId, closed } = await viewer();
    for (let i = 0; i < 300; i++) sendBad(socket);
    expect((await closed).code).toBe(code);
    await expect.poll(() => t.cp.sessions.get(sessionId).status).toBe('Terminated');
    const lines = logLines(from);
    const aboutTheFrames = lines.filter((l) => JSON.stringify(l).includes(reason));
    expect(aboutTheFrames).toHaveLength(1);
    expect(aboutTheFrames[0]).toMatchObject({ level: 40, msg: 'viewer signalling rejected', sessionId });
    expect(lines.filter((l) => l.level >= 50)).toEqual([]);
    expect(lines.filter((l) => JSON.stringify(l).includes('stack'))).toEqual([]);
  });
});

/** Writes raw bytes to the HTTP port and reads the whole answer, until the server closes. */
async function rawExchange(bytes: string | Buffer): Promise<{ status: number; headers: Record<string, string>; body: string }> {
  const socket = net.connect(t.started.httpPort, '127.0.0.1');
  const chunks: Buffer[] = [];
  socket.on('data', (c: Buffer) => chunks.push(c));
  const ended = new Promise<void>((resolve, reject) => {
    socket.on('close', () => resolve());
    socket.on('error', reject);
  });
  socket.write(bytes);
  await ended;
  const text = Buffer.concat(chunks).toString('latin1');
  const [head = '', body = ''] = text.split('\r\n\r\n', 2);
  const [statusLine = '', ...headerLines] = head.split('\r\n');
  const headers = Object.fromEntries(headerLines.map((h) => [h.slice(0, h.indexOf(':')).toLowerCase(), h.slice(h.indexOf(':') + 1).trim()]));
  return { status: Number(statusLine.split(' ')[1]), headers, body };
}

describe('requests refused before routing', () => {
  const refused: [string, string | Buffer, number, string][] = [
    ['oversized headers', `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 431, 'Request header fields are too large'],
    ['a raw non-ASCII byte in the request line', Buffer.concat([Buffer.from('GET /he'), Buffer.from([0xff]), Buffer.from('althz HTTP/1.1\r\nHost: x\r\n\r\n')]), 400, 'Malformed HTTP request'],
    ['a control byte in the request line', 'GET /a\x01b HTTP/1.1\r\nHost: x\r\n\r\n', 400, 'Malformed HTTP request'],
    ['a request line that is not HTTP', 'HELLO THERE\r\n\r\n', 400, 'Malformed HTTP request'],
    ['Content-Length beside Transfer-Encoding', 'POST /api/v1/x HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n', 400, 'Malformed HTTP request'],
    ['a malformed URL escape', 'GET /%zz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', 400, 'Malformed URL'],
    ['HTTP/1.1 without Host', 'GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n', 400, 'Missing Host header'],
    ['an Expect the server cannot meet', 'GET /healthz HTTP/1.1\r\nHost: x\r\nExpect: teapot\r\nConnection: close\r\n\r\n', 417, 'Expectation not supported'],
  ];

  it.each(refused)('%s: the right status and { message }', async (_name, bytes, status, message) => {
    const from = t.logs.lines.length;
    const res = await rawExchange(bytes);
    expect(res.status).toBe(status);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(JSON.parse(res.body)).toEqual({ message });
    expect(logLines(from).filter((l) => l.level >= 40)).toEqual([]);
  });

  it('HTTP/1.0 without Host is still served', async () => {
    const res = await rawExchange('GET /healthz HTTP/1.0\r\n\r\n');
    expect([res.status, JSON.parse(res.body)]).toEqual([200, { status: 'ok' }]);
  });
});

describe('secrets in logged URLs', () => {
  it('a request whose path and query hold an API key leaves no trace of it in the log', async () => {
    const user = await t.cp.accounts.createUser('pasted@example.com');
    const apiKey = await t.cp.accounts.issueKey(user.userId);
    const from = t.logs.lines.length;
    const res = await fetch(`${t.started.httpOrigin}/api/v1/projects/${apiKey}/builds?userId=${apiKey}`);
    expect(res.status).toBe(404);
    const logged = t.logs.lines.slice(from).join('\n');
    expect(logged).toContain('/api/v1/projects/[Redacted]/builds?userId=[Redacted]');
    expect(logged).not.toContain(apiKey.slice('pfk_'.length, 'pfk_'.length + 16));
  });

  it('nor does an upgrade to a page route with a key in its path (@fastify/websocket logs its path)', async () => {
    const user = await t.cp.accounts.createUser('upgraded@example.com');
    const apiKey = await t.cp.accounts.issueKey(user.userId);
    const from = t.logs.lines.length;
    const socket = new WebSocket(`${t.started.publicUrls.share.replace(/^http/, 'ws')}/${apiKey}`);
    socket.on('error', () => undefined);
    await new Promise((resolve) => socket.on('close', resolve));
    const logged = t.logs.lines.slice(from).join('\n');
    expect(logged).toContain('"path":"/share/[Redacted]"');
    expect(logged).not.toContain(apiKey.slice('pfk_'.length, 'pfk_'.length + 16));
  });
});
