// A customer's page embedding the share page in an iframe, served from another origin (localhost
// against the player's 127.0.0.1, as a real embedding is), recording every message the player posts
// to it; and what browser tests read of the embedded player.
import { createServer } from 'node:http';
import type { Frame, Page } from 'playwright-core';

/** What the player posted to its host page (embed-messages.ts). */
export interface PlayerMessage {
  type: string;
  state?: string;
  data?: unknown;
  code?: number;
  reason?: string;
  message?: string;
}

/** Serves the host page for a share URL; its address and its close. */
export async function serveEmbeddingPage(shareUrl: string): Promise<{ url: string; close(): Promise<void> }> {
  const host = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' }).end(`<!doctype html><body style="margin:0">
<script>window.fromPlayer = []; addEventListener('message', (e) => { if (e.data && e.data.source === 'pixelfleet') window.fromPlayer.push(e.data); });</script>
<iframe id="player" src="${shareUrl}" style="width:1280px;height:720px;border:0" allow="autoplay; fullscreen"></iframe></body>`);
  });
  await new Promise<void>((resolve) => host.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://localhost:${(host.address() as { port: number }).port}/`,
    close: () => new Promise<void>((resolve) => host.close(() => resolve())),
  };
}

/** The embedded player's frame of a host page. */
export function playerFrame(page: Page): Frame {
  const frame = page.frames().find((f) => f.url().includes('/share/'));
  if (!frame) throw new Error('the player iframe is not there');
  return frame;
}

/** Frames the player's <video> has decoded (0 before the stream plays). */
export const framesDecoded = (page: Page): Promise<number> =>
  playerFrame(page).evaluate(() => document.querySelector('video')?.getVideoPlaybackQuality().totalVideoFrames ?? 0);

/** Everything the player posted to the host page so far. */
export const playerMessages = (page: Page): Promise<PlayerMessage[]> => page.evaluate(() => (window as unknown as { fromPlayer: PlayerMessage[] }).fromPlayer);
