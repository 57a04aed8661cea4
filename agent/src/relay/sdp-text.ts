// SDP as lines grouped by section, for the few surgical edits the relay makes (codec filtering,
// bitrate hints, announced addresses). Everything not touched is kept byte for byte.

export interface SdpText {
  /** Lines before the first m= line. */
  session: string[];
  /** One entry per m= section, its m= line first. */
  media: string[][];
}

export function parseSdp(sdp: string): SdpText {
  const lines = sdp.split(/\r?\n/).filter((line) => line.length > 0);
  const session: string[] = [];
  const media: string[][] = [];
  for (const line of lines) {
    if (line.startsWith('m=')) media.push([line]);
    else if (media.length === 0) session.push(line);
    else media[media.length - 1]?.push(line);
  }
  return { session, media };
}

export function serializeSdp(sdp: SdpText): string {
  return [...sdp.session, ...sdp.media.flat()].join('\r\n') + '\r\n';
}

/** 'video' for `m=video 9 UDP/TLS/RTP/SAVPF 96`. */
export function mediaKind(section: string[]): string {
  return /^m=(\S+)/.exec(section[0] ?? '')?.[1] ?? '';
}

/** Payload types listed on the m= line, in preference order. */
export function mediaFormats(section: string[]): number[] {
  return (section[0] ?? '').split(' ').slice(3).map(Number).filter(Number.isInteger);
}

/** `a=rtpmap:96 H264/90000` → Map(96 → 'H264/90000'). */
export function rtpmaps(section: string[]): Map<number, string> {
  const result = new Map<number, string>();
  for (const line of section) {
    const m = /^a=rtpmap:(\d+) (\S+)/.exec(line);
    if (m?.[1] !== undefined && m[2] !== undefined) result.set(Number(m[1]), m[2]);
  }
  return result;
}

/** `a=fmtp:96 a=1;b=2` → Map(96 → Map(a → 1, b → 2)); keys lower-cased. */
export function fmtps(section: string[]): Map<number, Map<string, string>> {
  const result = new Map<number, Map<string, string>>();
  for (const line of section) {
    const m = /^a=fmtp:(\d+) (.*)$/.exec(line);
    if (m?.[1] === undefined || m[2] === undefined) continue;
    const params = new Map<string, string>();
    for (const pair of m[2].split(';')) {
      const [key, ...value] = pair.trim().split('=');
      if (key) params.set(key.toLowerCase(), value.join('='));
    }
    result.set(Number(m[1]), params);
  }
  return result;
}

/** The payload type a per-codec attribute line applies to (rtpmap, fmtp, rtcp-fb), or undefined. */
export function attributePayloadType(line: string): number | '*' | undefined {
  const m = /^a=(?:rtpmap|fmtp|rtcp-fb):(\d+|\*)[ ]/.exec(line);
  if (m?.[1] === undefined) return undefined;
  return m[1] === '*' ? '*' : Number(m[1]);
}
