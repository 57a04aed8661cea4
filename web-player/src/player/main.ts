// Entry of the browser bundle (player.js): finds the page's root element and starts the viewer.

import './player.css';
import { Viewer } from './viewer';

function start(): void {
  const root = document.getElementById('pixelfleet-player');
  if (root === null) throw new Error('pixelfleet: #pixelfleet-player is missing from the page');
  new Viewer({ root, window });
}

if (document.readyState === 'loading') {
  document.addEventListener('DOMContentLoaded', start, { once: true });
} else {
  start();
}
