// The viewer's network path to the control plane, for tests of what a slow or broken path does to
// a stream: a TCP proxy on 127.0.0.1 that the share page is opened through (the page opens its
// signalling socket beside itself, so that goes through here too). It reads the control plane's
// WebSocket frames toward the page — unmasked, and uncompressed since the gateway negotiates no
// extension — to act at a chosen message: hold that message and everything after it (a slow path),
// or drop the link right after it reached the page (both TCP connections close with no WebSocket
// close frame, so the page and the server each see 1006) and refuse new connections until up().
// A drop can also wait for the page's reply, which then never reaches the server: the page's
// frames toward the server (masked) are read too, so the test decides that the page's answer went
// into a dying socket instead of leaving it to a race between the page's answer and its close.
import { createServer, connect, type Server, type Socket } from 'node:net';

interface Link {
  page: Socket;
  server: Socket;
  /** Frames held back from the page while a hold is on, in order. */
  held: Buffer[] | undefined;
  /** The link is being cut: nothing more goes to the page. */
  cutting: boolean;
  /** The server switched it to WebSocket (101). */
  websocket: boolean;
  /** The link is being cut once the page writes a message of this type; until then the server reads nothing more from the page. */
  cutAtPage: { type: string; onCut(): void } | undefined;
}

type Lever = { kind: 'hold'; type: string; onHeld(link: Link): void } | { kind: 'cut'; type: string; thenPageSends: string | undefined; onCut(): void };

/** What is held: `release()` sends the held frames to the page, in order, and lets the rest through. */
export interface HeldMessages {
  /** Resolves when the message arrived and was held. */
  readonly held: Promise<void>;
  release(): void;
}

export class ViewerNetwork {
  private readonly links = new Set<Link>();
  private levers: Lever[] = [];
  private down = false;

  private constructor(
    private readonly proxy: Server,
    /** `http://127.0.0.1:<port>`: open the share page here. */
    readonly origin: string,
  ) {}

  /** A proxy to `targetOrigin` (`http://127.0.0.1:<port>`), listening on 127.0.0.1 port 0. */
  static async start(targetOrigin: string): Promise<ViewerNetwork> {
    const target = new URL(targetOrigin);
    const proxy = createServer();
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    const network = new ViewerNetwork(proxy, `http://127.0.0.1:${(proxy.address() as { port: number }).port}`);
    proxy.on('connection', (page) => network.accept(page, target.hostname, Number(target.port)));
    return network;
  }

  /** From the next server message of `type` (its JSON `type` field) on, nothing reaches that socket's page until release(). */
  holdFrom(type: string): HeldMessages {
    let link: Link | undefined;
    let released = false;
    const held = new Promise<void>((resolve) => this.levers.push({ kind: 'hold', type, onHeld: (l) => { link = l; resolve(); } }));
    return {
      held,
      release: () => {
        if (released || link === undefined) return;
        released = true;
        const frames = link.held ?? [];
        link.held = undefined;
        for (const frame of frames) link.page.write(frame);
      },
    };
  }

  /**
   * Right after the next server message of `type` reached the page, the link drops (no close frame
   * either way) and the network stays down until up(): every new connection is closed at once.
   * With `thenPageSends`, the drop waits until the page has written a message of that type; from
   * the server's message on, nothing the page writes reaches the server (a reply written into a
   * socket that is dying). Resolves when the link is cut.
   */
  cutAfter(type: string, options: { thenPageSends?: string } = {}): Promise<void> {
    return new Promise<void>((resolve) => this.levers.push({ kind: 'cut', type, thenPageSends: options.thenPageSends, onCut: resolve }));
  }

  /** Every WebSocket link drops now (no close frame either way); new connections go through. */
  dropWebSockets(): void {
    for (const link of this.links) if (link.websocket) this.drop(link);
  }

  /** Connections go through again. */
  up(): void {
    this.down = false;
  }

  async close(): Promise<void> {
    for (const link of this.links) this.drop(link);
    await new Promise<void>((resolve) => this.proxy.close(() => resolve()));
  }

  private accept(page: Socket, host: string, port: number): void {
    if (this.down) {
      page.destroy();
      return;
    }
    const server = connect(port, host);
    const link: Link = { page, server, held: undefined, cutting: false, websocket: false, cutAtPage: undefined };
    this.links.add(link);
    this.readPage(link);
    page.on('error', () => this.drop(link));
    server.on('error', () => this.drop(link));
    page.on('close', () => this.drop(link));
    server.on('close', () => this.drop(link));
    this.readServer(link);
  }

  /** The server's bytes to the page: raw for plain HTTP, frame by frame after a 101 Switching Protocols. */
  private readServer(link: Link): void {
    let pending = Buffer.alloc(0);
    let mode: 'head' | 'http' | 'websocket' = 'head';
    link.server.on('data', (chunk: Buffer) => {
      if (link.cutting) return;
      if (mode === 'http') return void link.page.write(chunk);
      pending = Buffer.concat([pending, chunk]);
      if (mode === 'head') {
        const end = pending.indexOf('\r\n\r\n');
        if (end < 0) return;
        const head = pending.subarray(0, end + 4);
        mode = /^HTTP\/1\.1 101/.test(head.toString('latin1')) ? 'websocket' : 'http';
        link.websocket = mode === 'websocket';
        link.page.write(mode === 'http' ? pending : head);
        pending = mode === 'http' ? Buffer.alloc(0) : pending.subarray(end + 4);
        if (mode === 'http') return;
      }
      for (;;) {
        const size = frameSize(pending);
        if (size === undefined || pending.length < size) return;
        const frame = pending.subarray(0, size);
        pending = pending.subarray(size);
        if (!this.deliver(link, frame)) return;
      }
    });
  }

  /** The page's bytes to the server: raw until the server's 101, then frame by frame (to see the page's messages). */
  private readPage(link: Link): void {
    let pending = Buffer.alloc(0);
    link.page.on('data', (chunk: Buffer) => {
      // Only the page's HTTP request comes before the 101: the page writes no frame before it reads one.
      if (!link.websocket) return void link.server.write(chunk);
      pending = Buffer.concat([pending, chunk]);
      for (;;) {
        const size = frameSize(pending);
        if (size === undefined || pending.length < size) return;
        const frame = pending.subarray(0, size);
        pending = pending.subarray(size);
        const cut = link.cutAtPage;
        if (cut === undefined) {
          link.server.write(frame);
          continue;
        }
        if (messageType(frame) !== cut.type) continue;
        link.cutAtPage = undefined;
        this.drop(link);
        cut.onCut();
        return;
      }
    });
  }

  /** Sends one frame on to the page (or holds it); false once the link is cut. */
  private deliver(link: Link, frame: Buffer): boolean {
    const type = messageType(frame);
    const lever = type === undefined ? undefined : this.levers.find((l) => l.type === type);
    if (lever !== undefined) this.levers = this.levers.filter((l) => l !== lever);
    if (lever?.kind === 'hold') {
      link.held = [];
      lever.onHeld(link);
    }
    if (link.held !== undefined) {
      link.held.push(Buffer.from(frame));
      return true;
    }
    if (lever?.kind !== 'cut') {
      link.page.write(frame);
      return true;
    }
    this.down = true;
    link.cutting = true;
    if (lever.thenPageSends !== undefined) {
      link.cutAtPage = { type: lever.thenPageSends, onCut: () => lever.onCut() };
      link.page.write(frame);
      return false;
    }
    link.page.write(frame, () => {
      this.drop(link);
      lever.onCut();
    });
    return false;
  }

  private drop(link: Link): void {
    if (!this.links.delete(link)) return;
    link.page.destroy();
    link.server.destroy();
  }
}

/** The whole frame's length in bytes once its header is in `buf`, else undefined. */
function frameSize(buf: Buffer): number | undefined {
  if (buf.length < 2) return undefined;
  const second = buf[1]!;
  const maskBytes = second & 0x80 ? 4 : 0;
  const length7 = second & 0x7f;
  if (length7 < 126) return 2 + maskBytes + length7;
  if (length7 === 126) return buf.length < 4 ? undefined : 4 + maskBytes + buf.readUInt16BE(2);
  return buf.length < 10 ? undefined : 10 + maskBytes + Number(buf.readBigUInt64BE(2));
}

/** The JSON `type` of an unfragmented text frame (the server's unmasked, the page's masked), else undefined. */
function messageType(frame: Buffer): string | undefined {
  const first = frame[0]!;
  if ((first & 0x0f) !== 1 || (first & 0x80) === 0) return undefined;
  const length7 = frame[1]! & 0x7f;
  const masked = (frame[1]! & 0x80) !== 0;
  const offset = length7 < 126 ? 2 : length7 === 126 ? 4 : 10;
  const mask = masked ? frame.subarray(offset, offset + 4) : undefined;
  const payload = Buffer.from(frame.subarray(offset + (masked ? 4 : 0)));
  if (mask !== undefined) for (let i = 0; i < payload.length; i += 1) payload[i] = payload[i]! ^ mask[i % 4]!;
  try {
    const message = JSON.parse(payload.toString('utf8')) as { type?: unknown };
    return typeof message.type === 'string' ? message.type : undefined;
  } catch {
    return undefined;
  }
}
