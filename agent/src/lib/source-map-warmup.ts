// Under `node --enable-source-maps` (the Windows service runs the bundle so, and the tests do),
// Node parses the bundle's 3.5 MB source map the first time any Error's stack is read — in one
// synchronous step of ~0.7 s on a 2-core server. The first such read used to come when the control
// link dropped (grpc-js builds an Error for the status), freezing every stream the agent relays for
// that long (control-plane-restart.test.ts: a 600–900 ms gap in the viewer's RTP). Node keeps the
// parsed map, so reading one stack before any session starts pays that cost once, at start.

/** Parses the running bundle's source map now, when source maps are on; returns the ms it took (0 when off). */
export function warmSourceMaps(now: () => number = () => performance.now()): number {
  if (!process.sourceMapsEnabled) return 0;
  const started = now();
  // Reading `stack` makes Node map this frame, which loads and parses the map of this file.
  void new Error('source map warm-up').stack;
  return now() - started;
}
