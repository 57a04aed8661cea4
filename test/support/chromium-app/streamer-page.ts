// The chromium app's page: a Pixel Streaming streamer written from the protocol brief
// (pixel-streaming.md §1.3, the streamer's side). It dials the signalling URL, identifies with its
// streamer id, and for each `playerConnected` makes a peer connection of its own (the `config`'s
// peerConnectionOptions, a `datachannel` channel, the game scene's canvas track and an audio
// track), offers with Chromium's defaults and takes the answer and candidates; `playerDisconnected`
// closes that player. libwebrtc (OpenH264) encodes, so the page makes a keyframe at the start of
// each peer connection and then only when a peer asks: exactly what the relay must get right.
//
// The page talks to its Node launcher through functions the launcher exposes: appLog(category,
// verbosity, message), appStatsLine(stats) every STATS_INTERVAL_MS and appSignallingClosed(code,
// reason). The launcher calls startApp(config) once the page has loaded.
import { GAME_SCENE_SCRIPT } from '../game-scene';
import { STATS_INTERVAL_MS } from './app-stats';

/** What the launcher hands startApp(). */
export interface StreamerPageConfig {
  signallingUrl: string;
  streamerId: string;
  width: number;
  height: number;
  fps: number;
  maxBitrateBps: number | undefined;
}

export const STREAMER_PAGE = `<!doctype html><meta charset="utf-8"><title>chromium app</title><body style="margin:0">
<canvas id="scene"></canvas>
<script>
${GAME_SCENE_SCRIPT}

const log = (message, verbosity = 'Log', category = 'LogPixelStreaming') => void window.appLog(category, verbosity, message);
const players = new Map();
// Keyframes as they leave the encoder (the encoded-frame tap), epoch ms, every player together.
const keyFrameTimes = [];
let scene, videoTrack, audioTrack, socket, peerConnectionOptions = {};

const send = (message) => { if (socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(message)); };

// Every sender's and receiver's encoded frames must be piped once encodedInsertableStreams is on,
// or nothing flows; the video sender's tap notes each keyframe.
const pipeEncoded = (endpoint, onFrame) => {
  const { readable, writable } = endpoint.createEncodedStreams();
  readable.pipeThrough(new TransformStream({ transform(frame, out) { onFrame?.(frame); out.enqueue(frame); } })).pipeTo(writable).catch(() => {});
};

async function connectPlayer(playerId, config) {
  if (players.has(playerId)) { log('Player ' + playerId + ' is connected already; ignoring playerConnected', 'Warning'); return; }
  log('Player ' + playerId + ' connected; creating peer connection');
  const pc = new RTCPeerConnection({ ...peerConnectionOptions, encodedInsertableStreams: true });
  const player = { playerId, pc, pendingCandidates: [], last: { keyFramesEncoded: 0, framesEncoded: 0, pliCount: 0, firCount: 0 }, encoder: { targetBitrate: 0, framesPerSecond: 0, qualityLimitationReason: '' } };
  players.set(playerId, player);
  pc.onicecandidate = (e) => { if (e.candidate && e.candidate.candidate) send({ type: 'iceCandidate', playerId, candidate: e.candidate.toJSON() }); };
  pc.onconnectionstatechange = () => log(playerId + ' peer connection state: ' + pc.connectionState);
  // As Unreal does: the app makes the one data channel, before its offer.
  const channel = pc.createDataChannel('datachannel', { ordered: true });
  channel.binaryType = 'arraybuffer';
  channel.onopen = () => log('Data channel for ' + playerId + ' open');
  channel.onclose = () => log('Data channel for ' + playerId + ' closed');
  const video = pc.addTransceiver(videoTrack, { direction: 'sendonly' });
  // Unreal streams at the size it renders (-ForceRes): the frame rate gives, never the resolution.
  const parameters = video.sender.getParameters();
  parameters.degradationPreference = 'maintain-resolution';
  if (config.maxBitrateBps !== undefined) for (const encoding of parameters.encodings) encoding.maxBitrate = config.maxBitrateBps;
  await video.sender.setParameters(parameters);
  pipeEncoded(video.sender, (frame) => { if (frame.type === 'key') keyFrameTimes.push(Date.now()); });
  const audio = pc.addTransceiver(audioTrack, { direction: 'sendrecv' });
  pipeEncoded(audio.sender);
  pipeEncoded(audio.receiver);
  // Chromium's default offer: every codec it has, RTX, header extensions; the relay narrows it.
  await pc.setLocalDescription(await pc.createOffer());
  send({ type: 'offer', playerId, sdp: pc.localDescription.sdp });
  log('Sent offer to ' + playerId);
}

async function onAnswer(message) {
  const player = players.get(message.playerId);
  if (!player) return log('Answer for unknown player ' + message.playerId + ' ignored', 'Warning');
  await player.pc.setRemoteDescription({ type: 'answer', sdp: message.sdp });
  for (const candidate of player.pendingCandidates.splice(0)) await player.pc.addIceCandidate(candidate);
  log('Received answer from ' + message.playerId);
}

async function onIceCandidate(message) {
  const player = players.get(message.playerId);
  if (!player) return;
  // Candidates may come before the answer: held until then.
  if (!player.pc.remoteDescription) player.pendingCandidates.push(message.candidate);
  else await player.pc.addIceCandidate(message.candidate);
}

function disconnectPlayer(playerId, why) {
  const player = players.get(playerId);
  if (!player || player.closed) return;
  player.closed = true;
  player.pc.close();
  log('Closed peer connection for ' + playerId + ' (' + why + '); ' + player.last.keyFramesEncoded + ' keyframes of ' + player.last.framesEncoded + ' frames, ' + player.last.pliCount + ' PLIs received');
}

async function onMessage(message) {
  switch (message.type) {
    case 'config': peerConnectionOptions = message.peerConnectionOptions || {}; break;
    case 'identify': send({ type: 'endpointId', id: window.appConfig.streamerId, protocolVersion: '1.3.0' }); break;
    case 'endpointIdConfirm': log('Streamer identified as ' + message.committedId); break;
    case 'playerConnected': await connectPlayer(message.playerId, window.appConfig); break;
    case 'playerDisconnected': disconnectPlayer(message.playerId, 'playerDisconnected'); break;
    case 'answer': await onAnswer(message); break;
    case 'iceCandidate': await onIceCandidate(message); break;
    case 'ping': send({ type: 'pong', time: message.time }); break;
    case 'pong': break;
    default: log('Ignoring signalling message of type ' + JSON.stringify(message.type), 'Warning');
  }
}

let reading = false;
async function reportStats() {
  if (reading) return;
  reading = true;
  try {
    const line = { at: Date.now(), sceneFrames: scene.frame(), keyFramesEncoded: 0, framesEncoded: 0, pliCount: 0, firCount: 0, keyFrameTimes: keyFrameTimes.slice(), players: [] };
    for (const player of players.values()) {
      if (!player.closed) {
        const report = await player.pc.getStats();
        report.forEach((s) => {
          if (s.type === 'outbound-rtp' && s.kind === 'video') {
            player.last = { keyFramesEncoded: s.keyFramesEncoded || 0, framesEncoded: s.framesEncoded || 0, pliCount: s.pliCount || 0, firCount: s.firCount || 0 };
            player.encoder = { targetBitrate: s.targetBitrate || 0, framesPerSecond: s.framesPerSecond || 0, qualityLimitationReason: s.qualityLimitationReason || '' };
          }
        });
      }
      line.players.push({ playerId: player.playerId, connectionState: player.pc.connectionState, ...player.last, ...player.encoder });
      for (const k of ['keyFramesEncoded', 'framesEncoded', 'pliCount', 'firCount']) line[k] += player.last[k];
    }
    await window.appStatsLine(line);
  } finally {
    reading = false;
  }
}

window.startApp = async (config) => {
  window.appConfig = config;
  scene = startGameScene(document.getElementById('scene'), { width: config.width, height: config.height, fps: config.fps });
  videoTrack = document.getElementById('scene').captureStream(config.fps).getVideoTracks()[0];
  videoTrack.contentHint = 'motion';
  // The fake capture device: an audio track, and the media permission without which chromium
  // gathers no host candidates (an app on a server does gather them).
  audioTrack = (await navigator.mediaDevices.getUserMedia({ audio: true })).getAudioTracks()[0];
  setInterval(() => void reportStats(), ${STATS_INTERVAL_MS});
  socket = new WebSocket(config.signallingUrl);
  socket.onopen = () => log('Connected to signalling ' + config.signallingUrl);
  socket.onmessage = (event) => {
    let message;
    try { message = JSON.parse(event.data); } catch { return log('Malformed signalling message ignored', 'Warning'); }
    onMessage(message).catch((err) => log('Handling ' + message.type + ' failed: ' + err, 'Error'));
  };
  socket.onclose = (event) => {
    for (const playerId of players.keys()) disconnectPlayer(playerId, 'signalling closed');
    void window.appSignallingClosed(event.code, event.reason);
  };
};
</script>`;
