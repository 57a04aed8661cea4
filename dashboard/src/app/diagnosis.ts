// The session diagnoses in plain language (control-plane analytics/session-diagnosis.ts names them).

export const DIAGNOSIS_WORDS: Record<string, { label: string; tone: 'good' | 'bad' | 'neutral'; explanation: string }> = {
  videoDelivered: { label: 'Video delivered', tone: 'good', explanation: "The player decoded frames, or (when it left before reporting) the viewer's browser confirmed it received a whole picture: the viewer saw the stream." },
  connectedWithoutVideo: { label: 'Connected, no video', tone: 'bad', explanation: 'The player reported events but decoded no frame: the media connection carried no picture.' },
  mediaNeverConnected: { label: 'Media never connected', tone: 'bad', explanation: 'The player answered the stream but its media connection never came up (often a firewall or a TURN server missing).' },
  neverReported: { label: 'Never reported', tone: 'neutral', explanation: 'The player sent no telemetry: the viewer left before the page reported, or blocked it.' },
  telemetryExpired: { label: 'Telemetry expired', tone: 'neutral', explanation: "The player's telemetry was deleted (past the retention period) before a verdict was kept with the session." },
};

export function diagnosisWords(diagnosis: string): { label: string; tone: 'good' | 'bad' | 'neutral'; explanation: string } {
  return DIAGNOSIS_WORDS[diagnosis] ?? { label: diagnosis, tone: 'neutral', explanation: '' };
}
