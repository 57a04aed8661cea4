// The data-channel start-up race at volume: 120 werift viewers each send from their channel's
// open handler (which werift puts on the wire ahead of its DCEP ACK, see README) and must get the
// app's replayed start-up messages. Delivery must be 100 % both ways, byte for byte.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { FakeApp, STARTUP_MESSAGES } from '../../../test/support/relay/fake-app';
import { FakeViewer } from '../../../test/support/relay/fake-viewer';
import { connectApp, connectViewer, createRelay, until } from '../../../test/support/relay/harness';

const VIEWERS = 120;
const AT_ONCE = 4;

const { relay } = createRelay();
const app = new FakeApp();

beforeAll(async () => {
  await connectApp(relay, app);
  await until(() => app.channel.readyState === 'open', [(l) => app.onChange(l)], "the app's channel open");
});

afterAll(async () => {
  relay.close();
  await relay.whenClosed();
  await app.close();
});

/** A Pixel Streaming-like ToStreamer message unique to viewer i: UIInteraction (50) + u16 length + UTF-16LE. */
function hello(i: number): Buffer {
  const text = Buffer.from(`{"viewer":${i},"early":true}`, 'utf16le');
  const length = Buffer.alloc(2);
  length.writeUInt16LE(text.length / 2, 0);
  return Buffer.concat([Buffer.from([50]), length, text, Buffer.from([0x00, 0xff, 0x80])]);
}

async function oneViewer(i: number): Promise<{ received: Buffer[] }> {
  const id = `race-${i}`;
  const expected = hello(i);
  const viewer = new FakeViewer({ sendOnOpen: expected, recordRtp: false });
  try {
    await connectViewer(relay, id, viewer);
    await until(
      () => viewer.messages.length >= STARTUP_MESSAGES.length && app.messages.some((m) => m.equals(expected)),
      [(l) => viewer.onChange(l), (l) => app.onChange(l)],
      `viewer ${i}: start-up messages in and hello out`,
    );
    return { received: [...viewer.messages] };
  } finally {
    relay.removeViewer(id);
    await viewer.close();
  }
}

it(`delivers every viewer's first message and the replayed start-up messages to ${VIEWERS} viewers`, { timeout: 120_000 }, async () => {
  const started = performance.now();
  const results: { received: Buffer[] }[] = [];
  for (let first = 0; first < VIEWERS; first += AT_ONCE) {
    const batch = Array.from({ length: Math.min(AT_ONCE, VIEWERS - first) }, (_, k) => oneViewer(first + k));
    results.push(...(await Promise.all(batch)));
  }
  const seconds = (performance.now() - started) / 1000;
  const stats = relay.stats();
  console.log(
    `${VIEWERS} viewer connections in ${seconds.toFixed(1)} s (${(VIEWERS / seconds).toFixed(1)}/s, ${AT_ONCE} at a time); ` +
      `first messages that arrived while the relay's channel was still 'connecting': ${stats.dataChannelEarlyMessagesFromViewers}/${VIEWERS}`,
  );

  // Viewer → app: each viewer's message exactly once, byte for byte.
  for (let i = 0; i < VIEWERS; i++) expect(app.messages.filter((m) => m.equals(hello(i))), `hello ${i}`).toHaveLength(1);
  expect(app.messages).toHaveLength(VIEWERS);
  // App → viewer: the replay, exactly, to every viewer.
  for (const r of results) expect(r.received).toEqual(STARTUP_MESSAGES);
  expect(stats.dataChannelMessagesDropped).toBe(0);
  expect(stats.dataChannelMessagesToApp).toBe(VIEWERS);
  expect(stats.dataChannelMessagesToViewers).toBe(VIEWERS * STARTUP_MESSAGES.length);
  // The race was really exercised: werift delivered (nearly) all of them before the DCEP ACK.
  expect(stats.dataChannelEarlyMessagesFromViewers).toBeGreaterThan(0);
});
