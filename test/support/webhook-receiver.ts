// A real local webhook receiver (mounted on a test server's `/hook`): keeps every delivery's
// envelope in arrival order and lets a test wait for a build's events.
import type { IncomingMessage, ServerResponse } from 'node:http';

export interface Delivery {
  event: string;
  uploadId: string | null;
  status: string;
  objection: string | null;
}

export class WebhookReceiver {
  readonly deliveries: Delivery[] = [];
  private readonly waiters: (() => void)[] = [];

  /** Handles a delivery POSTed to `/hook` (answers 204); false for any other request, left to the caller. */
  handle(req: IncomingMessage, res: ServerResponse): boolean {
    if (req.method !== 'POST' || req.url !== '/hook') return false;
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const e = JSON.parse(body) as Delivery;
      this.deliveries.push({ event: e.event, uploadId: e.uploadId, status: e.status, objection: e.objection });
      res.writeHead(204).end();
      for (const w of this.waiters.splice(0)) w();
    });
    return true;
  }

  /** The build's deliveries as `<event> <status>`, in arrival order. */
  stages(uploadId: string): string[] {
    return this.of(uploadId).map((d) => `${d.event} ${d.status}`);
  }

  of(uploadId: string): Delivery[] {
    return this.deliveries.filter((d) => d.uploadId === uploadId);
  }

  /** Resolves with the build's deliveries once `count` (default 1) with `event` have arrived; rejects after timeoutMs (default 30,000). */
  async until(uploadId: string, event: string, options: { count?: number; timeoutMs?: number } = {}): Promise<Delivery[]> {
    const { count = 1, timeoutMs = 30_000 } = options;
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const mine = this.of(uploadId);
      if (mine.filter((d) => d.event === event).length >= count) return mine;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no ${event} for ${uploadId} within ${timeoutMs} ms; got ${JSON.stringify(this.stages(uploadId))}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }
}
