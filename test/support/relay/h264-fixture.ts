// A real H.264 stream for relay tests (ffmpeg testsrc 128x72, x264 Constrained Baseline 3.1, 6
// frames, IDR first, SPS/PPS in band; loops decodably) and an RFC 6184 packetizer (single NAL
// unit and FU-A, packetization-mode=1).

// ffmpeg -f lavfi -i testsrc=size=128x72:rate=30 -frames:v 6 -c:v libx264 -profile:v baseline -level 3.1
//   -pix_fmt yuv420p -bf 0 -x264-params repeat-headers=1:keyint=30 -f h264 out.h264   (profile-level-id 42c01f)
export const TEST_PATTERN_H264: Buffer = Buffer.from(
  'AAAAAWdCwB/ZAgv5cBEAAAMAAQAAAwA8DxgySAAAAAFoy4PLIAAAAQYF//9r3EXpvebZSLeWLNgg2SPu73gyNjQgLSBjb3JlIDE2' +
  'NCByMzA5NSBiYWVlNDAwIC0gSC4yNjQvTVBFRy00IEFWQyBjb2RlYyAtIENvcHlsZWZ0IDIwMDMtMjAyMiAtIGh0dHA6Ly93d3cu' +
  'dmlkZW9sYW4ub3JnL3gyNjQuaHRtbCAtIG9wdGlvbnM6IGNhYmFjPTAgcmVmPTMgZGVibG9jaz0xOjA6MCBhbmFseXNlPTB4MTow' +
  'eDExMSBtZT1oZXggc3VibWU9NyBwc3k9MSBwc3lfcmQ9MS4wMDowLjAwIG1peGVkX3JlZj0xIG1lX3JhbmdlPTE2IGNocm9tYV9t' +
  'ZT0xIHRyZWxsaXM9MSA4eDhkY3Q9MCBjcW09MCBkZWFkem9uZT0yMSwxMSBmYXN0X3Bza2lwPTEgY2hyb21hX3FwX29mZnNldD0t' +
  'MiB0aHJlYWRzPTIgbG9va2FoZWFkX3RocmVhZHM9MSBzbGljZWRfdGhyZWFkcz0wIG5yPTAgZGVjaW1hdGU9MSBpbnRlcmxhY2Vk' +
  'PTAgYmx1cmF5X2NvbXBhdD0wIGNvbnN0cmFpbmVkX2ludHJhPTAgYmZyYW1lcz0wIHdlaWdodHA9MCBrZXlpbnQ9MzAga2V5aW50' +
  'X21pbj0zIHNjZW5lY3V0PTQwIGludHJhX3JlZnJlc2g9MCByY19sb29rYWhlYWQ9MzAgcmM9Y3JmIG1idHJlZT0xIGNyZj0yMy4w' +
  'IHFjb21wPTAuNjAgcXBtaW49MCBxcG1heD02OSBxcHN0ZXA9NCBpcF9yYXRpbz0xLjQwIGFxPTE6MS4wMACAAAABZYiEC/JigACr' +
  'z4bkUmYvGgkFAAMeABm3/K+ZjPz1hP+0mvu+/9QcAOPyTNxSDsWrjv3+oIACDsDAACAMAAIBUwArl7wyqABDySMD9sHAA9YOxy7C' +
  'UKegAOhaznKUYEX7BiIJQAABMTiABAAEPBDAABZQQjFAAEx+OAAIhUcAATXYjFAAGFKOAALbscAAQ+oiYUAASMY4AAhaRwABJp8D' +
  '0wzAEgwDwAGP3c6wAa/exVFBD8wypxB+AD98vz/p/8AfVUO/YEgQOAYEAEAcAwDgCWOM6wA/AOxkAyeAAdjwqoJp53/xvf3XceUA' +
  '3jPBg+eBEEooAAmJRAAgACH2hAEAATRF//4QQh6AAzZCTlL2MxStBisQfL+QNwC4/NJf3WwYMp9NNMv+/w7wlgEMEAEQCxVvEa/6' +
  '8eZ5imBfaUIwM6GMRaBwfAAJsDoHBMP09Ph//iwXAgwAEISl45fE1htlc3gL4OXLWMa6HUnwQXdggJSk4OQB7wcIPv6R/2CwsAUU' +
  'bV3c37fAoAAgOETAAEBMACQEZSGswxyQQYJcgOwllY7gjtWBcgABAIA+5D//sJm+AAyaNIbdSKzqH5sRUm7omVqoYN///SCHwAKb' +
  '04mJ6hW2BQD/2CsPrxCLyMD5gjA+YMw6BmHQTLT0/+nwULDgJPU0aRk2JUVfJmJLsrp1TLPEEErFV74wAAwHaYmAagkhBPZVJ23/' +
  '/3cFTNxblcbFo7//eGEACIxoQABEIQTwPEaXwOQhJeGAf+wVglIeQfyxCfe8e2MHtj/7fYIASYAF/grsbXQVv99/j4Q/8B4HRJAo' +
  '6pQ0eQ5l8frhCACYAcIQADIADAqIqcPGaWfl4DjhD04I5BzA/L+wYD/kGwAyq2SN6ve2vm53e2btdfhgAFIHhIAcUGB1FZLWQEdk' +
  'tkB0hMAywemNc1IPnMLHCLcD7KGk4hgH/DXB4MiIcy5CBgMaBgABAEAAgSHAhTpYcI5ktWp7wQDRzowDgEOMlvnpdHEMA/yeByAP' +
  'MnZxplv7wgxwgSANzg5gGSnB8HqcWAB9DIA+QYA/0A8P+iuADcL4NP4YB//C4GFpG3pa1iFzdJ32/deBwABAFAA4wDoLhwEIJlhw' +
  'BBBstENFoaAcMOEpwTDNcH3nvgGAf68KgMHpfB1ZW+t4gEGQQQADre7XbcggMGLnAWAwMJjgWyx/3D/y82YMZln9fXwgALCnBAAF' +
  'EAgUBwEY+WCA0QuMGc8wP4ZLsc5Z4Nf60QwD/jSAQnJRsxxSvgxAQIR7pLwMAASYUMABA7pFu2Ge4eZZhxBDyw4gh5fjITFAAEd+' +
  'DgACAOAAIPUGAAEA0AAQpbQ/L4xLZviAAgmfgGhwSFBgAY/dzrkNf4GZ6LETeB+9mMP30WEJABjhAAQ4BBrAa8sRbxIwDuAMv5uB' +
  '4Dmg7ZGD0eKPeQCoAEuCkFQHAAJhwaAAIBqYIAgACB4hEAASdkWI9HT3kI3lkIyy/FkigACI/DAAEBIAAwAAgSQwABAqHAmFkIbI' +
  'tAIygoAEasWABGrFoABD0MgAEOpQAAl5CgABTyYYB/8FcHBAAN+EAQAEEgACMGEAQAQ0AAQSCJKWRIpf5VctfL8YooAAgKRoAAgr' +
  'ISAAIoa+HpSw8il/h3H/oaFCfABf60thlBD9dABA/jqqGPzeH8FhJgAYAAgLBAEIAKHABkeKGr5jO+3i5wAA3PAHpuIoYfyCPx2C' +
  'kiKQkRCAXAAlwMXDIYAAEYiWCAAJgMAaFQMAAIXIAAhRO/kqllKl/AAAAAFBmjgX4aWSUEla+rFLN1ustaouvo3RMAAAAAFBmlQF' +
  '+GSfwriK6vQJH1er6vy+I75OXHr/X+vWI1wAAAABQZpgL8MrzSAo2jY/WteasWv1bX+vVcIjXAAAAAFBmoArwyvNQKP681XMvhj+' +
  'uG8V11l8dzei+Ftk/6lSJgAAAAFBmqAnw0vETgoXzanpeI69ycuFy8Z1drzfwSa16Jg=',
  'base64',
);

/** NAL units of an Annex-B byte stream, start codes removed. */
export function splitAnnexB(stream: Buffer): Buffer[] {
  const starts: { at: number; length: number }[] = [];
  for (let i = 0; i + 3 <= stream.length; i++) {
    if (stream[i] === 0 && stream[i + 1] === 0) {
      if (stream[i + 2] === 1) starts.push({ at: i, length: 3 });
      else if (stream[i + 2] === 0 && stream[i + 3] === 1) {
        starts.push({ at: i, length: 4 });
        i++;
      }
    }
  }
  return starts.map((s, k) => stream.subarray(s.at + s.length, starts[k + 1]?.at ?? stream.length));
}

/** Access units: each ends with its (single) slice NAL unit (types 1 and 5). */
export function accessUnits(stream: Buffer): Buffer[][] {
  const units: Buffer[][] = [];
  let current: Buffer[] = [];
  for (const nal of splitAnnexB(stream)) {
    current.push(nal);
    const type = (nal[0] ?? 0) & 0x1f;
    if (type === 1 || type === 5) {
      units.push(current);
      current = [];
    }
  }
  return units;
}

export interface H264RtpPayload {
  payload: Buffer;
  /** Last packet of the access unit (RTP marker bit). */
  marker: boolean;
}

/** RTP payloads for one access unit: NAL units up to maxPayloadBytes whole, larger ones as FU-A. */
export function packetizeAccessUnit(nals: readonly Buffer[], maxPayloadBytes = 1_100): H264RtpPayload[] {
  const out: H264RtpPayload[] = [];
  for (const nal of nals) {
    if (nal.length <= maxPayloadBytes) {
      out.push({ payload: nal, marker: false });
      continue;
    }
    const header = nal[0] ?? 0;
    const body = nal.subarray(1);
    const chunk = maxPayloadBytes - 2;
    for (let at = 0; at < body.length; at += chunk) {
      const first = at === 0;
      const last = at + chunk >= body.length;
      const fuIndicator = (header & 0xe0) | 28;
      const fuHeader = (first ? 0x80 : 0) | (last ? 0x40 : 0) | (header & 0x1f);
      out.push({ payload: Buffer.concat([Buffer.from([fuIndicator, fuHeader]), body.subarray(at, at + chunk)]), marker: false });
    }
  }
  const last = out[out.length - 1];
  if (last) last.marker = true;
  return out;
}
