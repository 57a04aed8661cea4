// What a game draws, for the chromium pages that stand in for a packaged Unreal app (issue 21):
// temporally coherent motion at the project's resolution — a camera panning over a detailed world
// at a sub-pixel speed (fine texture that never lines up with the last frame exactly), objects
// moving across it on their own paths, a spinning element and a frame counter — so the encoder
// predicts each frame from the last and makes keyframes only at the start and when asked, while
// every frame still costs bits. Fresh full-frame noise would read as a scene cut to OpenH264 (an
// IDR every ~0.7 s without any request) and hide a broken keyframe request.
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
  // The world: twice the frame each way, colour regions plus grey detail at pixel scale.
  const worldW = width * 2, worldH = height * 2;
  const world = document.createElement('canvas'); world.width = worldW; world.height = worldH;
  const wg = world.getContext('2d', { alpha: false });
  for (let i = 0; i < 400; i++) {
    wg.fillStyle = 'hsl(' + Math.floor(rand() * 360) + ',' + Math.floor(30 + rand() * 50) + '%,' + Math.floor(25 + rand() * 45) + '%)';
    wg.fillRect(rand() * worldW, rand() * worldH, 40 + rand() * worldW / 6, 40 + rand() * worldH / 6);
  }
  const detail = wg.getImageData(0, 0, worldW, worldH);
  for (let i = 0; i < detail.data.length; i += 4) {
    const d = (rand() - 0.5) * 90;
    detail.data[i] += d; detail.data[i + 1] += d; detail.data[i + 2] += d;
  }
  wg.putImageData(detail, 0, 0);
  // Objects: textured tiles with their own velocities, bouncing inside the frame.
  const sprites = [];
  for (let i = 0; i < 12; i++) {
    const size = Math.round(height / 10 + rand() * height / 6);
    const tile = document.createElement('canvas'); tile.width = size; tile.height = size;
    const tg = tile.getContext('2d');
    const img = tg.createImageData(size, size);
    const hue = [rand() * 255, rand() * 255, rand() * 255];
    for (let p = 0; p < img.data.length; p += 4) {
      const d = rand() * 120;
      img.data[p] = hue[0] * 0.6 + d; img.data[p + 1] = hue[1] * 0.6 + d; img.data[p + 2] = hue[2] * 0.6 + d; img.data[p + 3] = 255;
    }
    tg.putImageData(img, 0, 0);
    sprites.push({ tile, size, x: rand() * (width - size), y: rand() * (height - size), vx: (rand() - 0.5) * 14, vy: (rand() - 0.5) * 10 });
  }
  let n = 0;
  const draw = () => {
    n++;
    // The camera: a smooth path at ~4.4 px per frame, never a whole pixel.
    const cx = (worldW - width) / 2 + Math.sin(n / 173) * (worldW - width) / 2.1;
    const cy = (worldH - height) / 2 + Math.sin(n / 241) * (worldH - height) / 2.1;
    g.drawImage(world, -cx, -cy);
    for (const s of sprites) {
      s.x += s.vx; s.y += s.vy;
      if (s.x < 0 || s.x > width - s.size) s.vx = -s.vx;
      if (s.y < 0 || s.y > height - s.size) s.vy = -s.vy;
      g.drawImage(s.tile, s.x, s.y);
    }
    g.save();
    g.translate(width * 0.8, height * 0.25);
    g.rotate(n / 30);
    g.fillStyle = '#e8c547'; g.fillRect(-height / 12, -height / 60, height / 6, height / 30);
    g.restore();
    g.fillStyle = '#000'; g.fillRect(20, 20, 360, 50); g.fillStyle = '#fff'; g.font = '36px monospace'; g.fillText('frame ' + n, 30, 58);
  };
  draw();
  const timer = setInterval(draw, 1000 / fps);
  return { frame: () => n, stop: () => clearInterval(timer) };
}
`;
