// Watches the share page's peer connections from inside the page (an init script that wraps
// RTCPeerConnection before the player loads): when each one reached 'connected' and when it
// decoded its first video frame, in epoch ms, so a test can put them beside the app's own
// keyframe times (same machine clock). The first frame is read from getStats every 20 ms.
import type { Page } from 'playwright-core';

export interface ViewerPeer {
  createdAt: number;
  connectedAt: number | undefined;
  firstFrameAt: number | undefined;
  /** inbound-rtp video figures at the last poll (0 before connected). */
  framesDecoded: number;
  keyFramesDecoded: number;
  pliCount: number;
}

/** Run before the page's own scripts: page.addInitScript(VIEWER_PEER_PROBE). */
export const VIEWER_PEER_PROBE = String.raw`(() => {
  const Native = window.RTCPeerConnection;
  const peers = [];
  window.viewerPeers = peers;
  window.RTCPeerConnection = class extends Native {
    constructor(...args) {
      super(...args);
      const peer = { createdAt: Date.now(), connectedAt: undefined, firstFrameAt: undefined, framesDecoded: 0, keyFramesDecoded: 0, pliCount: 0 };
      peers.push(peer);
      this.addEventListener('connectionstatechange', () => {
        if (this.connectionState !== 'connected' || peer.connectedAt !== undefined) return;
        peer.connectedAt = Date.now();
        const poll = setInterval(async () => {
          if (this.connectionState === 'closed') return clearInterval(poll);
          (await this.getStats()).forEach((s) => {
            if (s.type !== 'inbound-rtp' || s.kind !== 'video') return;
            peer.framesDecoded = s.framesDecoded || 0;
            peer.keyFramesDecoded = s.keyFramesDecoded || 0;
            peer.pliCount = s.pliCount || 0;
            if (peer.framesDecoded > 0) peer.firstFrameAt ??= Date.now();
          });
        }, 20);
      });
    }
  };
})();`;

/** The page's peer connections so far, oldest first. */
export function viewerPeers(page: Page): Promise<ViewerPeer[]> {
  return page.evaluate(() => (window as unknown as { viewerPeers: ViewerPeer[] }).viewerPeers);
}

/** The page's peer connection that reached 'connected' (the stream's), or undefined. */
export async function connectedViewerPeer(page: Page): Promise<ViewerPeer | undefined> {
  return (await viewerPeers(page)).find((p) => p.connectedAt !== undefined);
}
