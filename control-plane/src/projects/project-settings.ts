// A project's streaming settings with every default in one place. Stored as JSON on the
// project; the settings API (PATCH) validates against the allow-list before writing.
import type { Codec } from '@pixelfleet/proto';

export interface ProjectSettings {
  codec: Codec;
  /** Encoder bitrate floor, bits per second. */
  minBitrate: number;
  /** Encoder bitrate ceiling, bits per second. */
  maxBitrate: number;
  /** Render and stream width in pixels (even). */
  resX: number;
  /** Render and stream height in pixels (even). */
  resY: number;
  fps: number;
  /** Runtime cap per session in minutes; 0 = none. */
  maxRunTime: number;
  /** Seconds without viewer input before a session ends; 0 = never. */
  afkTimeout: number;
  /** Concurrent sessions of the project; 0 = as many as workers allow. */
  maxConcurrentSessions: number;
  /** Extra Unreal arguments (`-Name` or `-Name=value`). */
  launchArgs: string[];
  /** Seconds the app may take to identify itself before the launch counts as failed. */
  startupTimeoutSeconds: number;
  /**
   * Sites that may embed the share page (exact origins, `https://shop.example.com`): they alone may
   * frame it, receive its postMessage events and open its signalling socket, beside the share page
   * itself. Empty: any site, as before the list existed.
   */
  embedOrigins: string[];
  /** Warm instances kept launched and ready for the next viewers (sessions/warm-pool.ts); 0 = none. */
  warmPoolMinIdle: number;
  /**
   * Seconds a viewer may wait in line before the pool grows by one (up to the region's slots);
   * it shrinks back to warmPoolMinIdle after WARM_POOL_QUIET_MS without such a wait. 0 = it never grows.
   */
  warmPoolQueueWaitTargetSeconds: number;
  /** Minutes an unclaimed warm instance lives before it is replaced by a fresh one. */
  warmInstanceMaxAgeMinutes: number;
}

export const DEFAULT_PROJECT_SETTINGS: Readonly<ProjectSettings> = Object.freeze({
  codec: 'H264',
  minBitrate: 1_000_000,
  maxBitrate: 20_000_000,
  resX: 1920,
  resY: 1080,
  fps: 30,
  maxRunTime: 60,
  afkTimeout: 0,
  maxConcurrentSessions: 0,
  launchArgs: [],
  startupTimeoutSeconds: 60,
  embedOrigins: [],
  warmPoolMinIdle: 0,
  warmPoolQueueWaitTargetSeconds: 0,
  warmInstanceMaxAgeMinutes: 60,
});

/** Stored JSON over the defaults; unknown stored keys are ignored. */
export function resolveProjectSettings(stored: string | undefined): ProjectSettings {
  let parsed: Record<string, unknown> = {};
  try {
    const value = JSON.parse(stored ?? '{}') as unknown;
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) parsed = value as Record<string, unknown>;
  } catch {
    parsed = {};
  }
  const out: ProjectSettings = { ...DEFAULT_PROJECT_SETTINGS, launchArgs: [...DEFAULT_PROJECT_SETTINGS.launchArgs], embedOrigins: [...DEFAULT_PROJECT_SETTINGS.embedOrigins] };
  for (const key of Object.keys(DEFAULT_PROJECT_SETTINGS) as (keyof ProjectSettings)[]) {
    if (parsed[key] !== undefined && typeof parsed[key] === typeof DEFAULT_PROJECT_SETTINGS[key]) {
      (out as unknown as Record<string, unknown>)[key] = parsed[key];
    }
  }
  return out;
}
