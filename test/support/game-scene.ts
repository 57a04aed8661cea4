// What a game draws, for the chromium pages that stand in for a packaged Unreal app (issue 21): a
// landscape seen from a moving camera — a sky with drifting clouds above the horizon, distant hills
// in parallax, and below them detailed ground (colour regions, pixel-scale texture) that the camera
// pans over at a sub-pixel speed, objects moving across it on their own paths, a spinning element
// and a HUD with a frame counter. The encoder predicts each frame from the last, so it makes
// keyframes only at the start and when asked, while the ground's fine texture makes every frame
// cost bits (10–20 Mbps at 720p30 and 1080p30, keyframes of hundreds of KB).
//
// Why the sky: OpenH264 (libwebrtc's H.264 encoder, and so the app's) encodes a frame as an IDR
// when at least 85 % of its 8×8 luma blocks differ from the same block of the last frame by a SAD
// above 320 — co-located, no motion search (processing/src/scenechangedetection). A camera panning
// over fine texture moves every block of it, so a frame of nothing but textured ground reads as a
// scene cut (as fresh noise does: an IDR every ~0.7 s without any request, which hid a broken
// keyframe request). The sky and the HUD — over a third of the frame, as in many games — barely change
// from frame to frame, which keeps every frame well under that threshold.
//
// Exported as page script text: `startGameScene(canvas, { width, height, fps })` draws into the
// canvas on a timer and returns { frame(): number, stop(): void }.
export const GAME_SCENE_SCRIPT = String.raw`
function startGameScene(canvas, { width, height, fps }) {
  canvas.width = width; canvas.height = height;
  const g = canvas.getContext('2d', { alpha: false });
  // A seeded generator: the same world every run, so runs compare.
  let seed = 0x2f6b1d;
  const rand = () => { seed = (seed * 1664525 + 1013904223) >>> 0; return seed / 4294967296; };
  const layer = (w, h) => { const c = document.createElement('canvas'); c.width = w; c.height = h; return c; };
  const horizon = Math.round(height * 0.35);
  const groundH = height - horizon;

  // The sky: a smooth gradient and soft clouds, twice the frame's width, drifting slowly.
  const sky = layer(width * 2, horizon);
  const sg = sky.getContext('2d');
  const gradient = sg.createLinearGradient(0, 0, 0, horizon);
  gradient.addColorStop(0, '#1d4f91'); gradient.addColorStop(1, '#a9cbe8');
  sg.fillStyle = gradient; sg.fillRect(0, 0, sky.width, horizon);
  for (let i = 0; i < 14; i++) {
    const x = rand() * sky.width, y = rand() * horizon * 0.7, r = horizon * (0.12 + rand() * 0.2);
    const puff = sg.createRadialGradient(x, y, 0, x, y, r);
    puff.addColorStop(0, 'rgba(255,255,255,0.75)'); puff.addColorStop(1, 'rgba(255,255,255,0)');
    sg.fillStyle = puff; sg.fillRect(x - r, y - r, 2 * r, 2 * r);
  }
  // Distant hills: a silhouette band on the horizon, three frames wide.
  const hillsH = Math.round(height * 0.12);
  const hills = layer(width * 3, hillsH);
  const hg = hills.getContext('2d');
  hg.fillStyle = '#4d6b57'; hg.beginPath(); hg.moveTo(0, hillsH);
  for (let x = 0; x <= hills.width; x += 40) hg.lineTo(x, hillsH * (0.25 + 0.5 * (Math.sin(x / 170) * 0.5 + 0.5) * (0.6 + 0.4 * Math.sin(x / 53))));
  hg.lineTo(hills.width, hillsH); hg.closePath(); hg.fill();

  // The ground: twice the frame each way, colour regions plus grey detail at pixel scale.
  const worldW = width * 2, worldH = groundH * 2;
  const world = layer(worldW, worldH);
  const wg = world.getContext('2d', { alpha: false });
  for (let i = 0; i < 400; i++) {
    wg.fillStyle = 'hsl(' + Math.floor(60 + rand() * 100) + ',' + Math.floor(25 + rand() * 45) + '%,' + Math.floor(20 + rand() * 40) + '%)';
    wg.fillRect(rand() * worldW, rand() * worldH, 40 + rand() * worldW / 6, 40 + rand() * worldH / 6);
  }
  const detail = wg.getImageData(0, 0, worldW, worldH);
  for (let i = 0; i < detail.data.length; i += 4) {
    const d = (rand() - 0.5) * 120;
    detail.data[i] += d; detail.data[i + 1] += d; detail.data[i + 2] += d;
  }
  wg.putImageData(detail, 0, 0);

  // Objects: textured tiles with their own velocities, bouncing inside the ground.
  const sprites = [];
  for (let i = 0; i < 10; i++) {
    const size = Math.round(groundH / 8 + rand() * groundH / 5);
    const tile = layer(size, size);
    const tg = tile.getContext('2d');
    const img = tg.createImageData(size, size);
    const hue = [rand() * 255, rand() * 255, rand() * 255];
    for (let p = 0; p < img.data.length; p += 4) {
      const d = rand() * 120;
      img.data[p] = hue[0] * 0.6 + d; img.data[p + 1] = hue[1] * 0.6 + d; img.data[p + 2] = hue[2] * 0.6 + d; img.data[p + 3] = 255;
    }
    tg.putImageData(img, 0, 0);
    sprites.push({ tile, size, x: rand() * (width - size), y: horizon + rand() * (groundH - size), vx: (rand() - 0.5) * 14, vy: (rand() - 0.5) * 8 });
  }

  let n = 0;
  const draw = () => {
    n++;
    // The camera: a smooth path at up to ~3.5 px per frame (720p), never a whole pixel.
    const cx = (worldW - width) / 2 + Math.sin(n / 173) * (worldW - width) / 2.1;
    const cy = (worldH - groundH) / 2 + Math.sin(n / 241) * (worldH - groundH) / 2.1;
    const skyX = (n * 0.35) % width;
    g.drawImage(sky, -skyX, 0);
    g.drawImage(hills, -(cx * 0.25) % width, horizon - hillsH);
    g.drawImage(world, cx, cy, width, groundH, 0, horizon, width, groundH);
    for (const s of sprites) {
      s.x += s.vx; s.y += s.vy;
      if (s.x < 0 || s.x > width - s.size) s.vx = -s.vx;
      if (s.y < horizon || s.y > height - s.size) s.vy = -s.vy;
      g.drawImage(s.tile, s.x, s.y);
    }
    // A windmill's sails turning against the sky.
    g.save();
    g.translate(width * 0.8, horizon * 0.55);
    g.rotate(n / 30);
    g.fillStyle = '#e8c547';
    for (let k = 0; k < 4; k++) { g.rotate(Math.PI / 2); g.fillRect(0, -height / 90, height / 8, height / 45); }
    g.restore();
    // The HUD: a frame counter.
    g.fillStyle = '#000'; g.fillRect(20, 20, 360, 50); g.fillStyle = '#fff'; g.font = '36px monospace'; g.fillText('frame ' + n, 30, 58);
  };
  draw();
  const timer = setInterval(draw, 1000 / fps);
  return { frame: () => n, stop: () => clearInterval(timer) };
}
`;
