// Kernel buffers of a werift peer's UDP sockets. werift keeps the OS defaults (208 KiB on Linux,
// 64 KiB on Windows): a 1080p keyframe of 300–1,000 KB arrives as one paced burst of 250–850
// packets, and every datagram costs its truesize (~2.3 KB for 1,200 bytes on Linux), so a default
// buffer holds under 100 packets — a few milliseconds of the relay being busy elsewhere — and the
// kernel drops the rest (`RcvbufErrors` in /proc/net/snmp). Linux caps a request at
// net.core.rmem_max / wmem_max and reports twice the value set (its bookkeeping), so a report at
// least the size asked means the request was granted; Windows takes what is asked.
import type { Socket } from 'node:dgram';
import type { RTCPeerConnection } from 'werift';

/** The ingest's receive buffer: about two seconds of a 20 Mbps stream, keyframes included. */
export const INGEST_RECV_BUFFER_BYTES = 4 * 1024 * 1024;
/** A viewer leg's send buffer: one 1080p keyframe leaving at once toward a slow network. */
export const VIEWER_SEND_BUFFER_BYTES = 2 * 1024 * 1024;

export interface SocketBufferSizes {
  /** Sockets found (one per gathered host address). */
  sockets: number;
  /** The smallest receive / send buffer the kernel granted, bytes (0 when no socket). */
  recvBytes: number;
  sendBytes: number;
}

/**
 * Asks for the given buffer sizes on every UDP socket the peer gathered (call after
 * setLocalDescription: werift binds its sockets while gathering). Never throws: a refused size
 * leaves the socket as it was.
 */
export function growSocketBuffers(pc: RTCPeerConnection, wanted: { recvBytes?: number; sendBytes?: number }): SocketBufferSizes {
  const sockets = udpSockets(pc);
  let recvBytes = Infinity;
  let sendBytes = Infinity;
  for (const socket of sockets) {
    try {
      if (wanted.recvBytes !== undefined) socket.setRecvBufferSize(wanted.recvBytes);
      if (wanted.sendBytes !== undefined) socket.setSendBufferSize(wanted.sendBytes);
      recvBytes = Math.min(recvBytes, socket.getRecvBufferSize());
      sendBytes = Math.min(sendBytes, socket.getSendBufferSize());
    } catch {
      // A socket closed meanwhile, or a size the platform refuses: keep its defaults.
    }
  }
  return { sockets: sockets.length, recvBytes: Number.isFinite(recvBytes) ? recvBytes : 0, sendBytes: Number.isFinite(sendBytes) ? sendBytes : 0 };
}

/**
 * werift's sockets, reached through its ICE objects (not part of its typed API: checked at run
 * time, so a werift that moved them yields none, and the relay runs on the OS defaults).
 */
function udpSockets(pc: RTCPeerConnection): Socket[] {
  const found: Socket[] = [];
  for (const ice of pc.iceTransports) {
    const protocols: unknown = (ice.connection as unknown as { protocols?: unknown }).protocols;
    if (!Array.isArray(protocols)) continue;
    for (const protocol of protocols as unknown[]) {
      const socket = (protocol as { transport?: { socket?: unknown } } | undefined)?.transport?.socket;
      if (isDgramSocket(socket)) found.push(socket);
    }
  }
  return found;
}

function isDgramSocket(value: unknown): value is Socket {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as Socket).setRecvBufferSize === 'function' &&
    typeof (value as Socket).getRecvBufferSize === 'function' &&
    typeof (value as Socket).setSendBufferSize === 'function'
  );
}
