import { describe, expect, it } from 'vitest';
import { statsRow, type StatsSource } from './rows';

const AT = new Date('2026-06-01T12:00:05.000Z');

function stats(overrides: Partial<StatsSource> = {}): StatsSource {
  return {
    inboundVideoStats: {
      framesPerSecond: 59.7,
      framesDecoded: 1234,
      bitrate: 8123,
      packetsLost: 3,
      framesDropped: 2,
      frameWidth: 1920,
      frameHeight: 1080,
      codecId: 'CIT01_102',
    },
    codecs: new Map([['CIT01_102', { mimeType: 'video/H264' }]]),
    getActiveCandidatePair: () => ({ currentRoundTripTime: 0.0234 }),
    ...overrides,
  };
}

describe('statsRow', () => {
  it('shapes the spec statistics row, every value a string', () => {
    const row = statsRow(stats(), AT);
    expect(row).toEqual({
      timestamp: '2026-06-01T12:00:05.000Z',
      FPS: '60',
      framesDecoded: '1234',
      bitrate: '8123',
      latency: '23',
      packetLoss: '3',
      framesDropped: '2',
      videoCodec: 'H264',
      videoResolution: '1920x1080',
    });
    expect(Object.keys(row).sort()).toEqual(
      ['FPS', 'bitrate', 'framesDecoded', 'framesDropped', 'latency', 'packetLoss', 'timestamp', 'videoCodec', 'videoResolution'].sort(),
    );
    for (const value of Object.values(row)) expect(typeof value).toBe('string');
  });

  it('falls back to the RTCP round-trip average when no candidate pair is selected', () => {
    const row = statsRow(
      stats({
        getActiveCandidatePair: () => null,
        remoteOutboundVideoStats: { totalRoundTripTime: 0.3, roundTripTimeMeasurements: 10 },
      }),
      AT,
    );
    expect(row.latency).toBe('30');
  });

  it('reports zero counters and empty descriptions before video arrives', () => {
    const row = statsRow({ inboundVideoStats: {}, getActiveCandidatePair: () => null }, AT);
    expect(row).toEqual({
      timestamp: '2026-06-01T12:00:05.000Z',
      FPS: '0',
      framesDecoded: '0',
      bitrate: '0',
      latency: '',
      packetLoss: '0',
      framesDropped: '0',
      videoCodec: '',
      videoResolution: '',
    });
  });

  it('ignores non-finite numbers and an unknown codec id', () => {
    const row = statsRow(
      stats({
        inboundVideoStats: { framesPerSecond: Number.NaN, bitrate: Number.POSITIVE_INFINITY, codecId: 'missing', frameWidth: 0, frameHeight: 720 },
      }),
      AT,
    );
    expect(row.FPS).toBe('0');
    expect(row.bitrate).toBe('0');
    expect(row.videoCodec).toBe('');
    expect(row.videoResolution).toBe('');
  });
});
