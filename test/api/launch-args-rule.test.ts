// One launch-argument rule for the settings API and the agent: for each sample list, PATCH
// /projects/{id}/settings accepts exactly what checkLaunchArgs (@pixelfleet/proto, which the agent
// applies before it builds a command line) accepts, and refuses the rest with the message of its kind.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkLaunchArgs, PROTECTED_LAUNCH_ARG_NAMES } from '@pixelfleet/proto';
import { answer, startApiFixture, type ApiFixture } from './api-fixture';

let f: ApiFixture;
beforeAll(async () => {
  f = await startApiFixture();
});
afterAll(async () => {
  await f.close();
});

const SAMPLES: unknown[] = [
  ['-AudioMixer', '-Res.Scale=1.5', '-ExecCmds=r.ScreenPercentage=75,t.MaxFPS=60', '-X=C:\\data'],
  Array.from({ length: 64 }, (_, i) => `-A${i}`),
  Array.from({ length: 65 }, (_, i) => `-A${i}`),
  '-AudioMixer',
  [42],
  [`-N=${'x'.repeat(509)}`],
  [`-N=${'x'.repeat(510)}`],
  ['AudioMixer'],
  ['-Name='],
  ['-Name=a b'],
  ['-Name="x"'],
  ['-Name=a\u00a0b'],
  ['-AudioMixer\n'],
  ['-ok', '-Foo=-abslog=x'],
  ...PROTECTED_LAUNCH_ARG_NAMES.map((p) => ['-ok', `-My${p.toLowerCase()}=1`]),
];

/** What the settings API answers when the shared rule says `refusal`. */
function expected(args: unknown): [number, unknown] {
  const refusal = checkLaunchArgs(args);
  if (refusal === undefined) return [200, expect.anything()];
  if (refusal.kind === 'list') return [400, { message: 'Invalid field: launchArgs must be a list of at most 64 arguments' }];
  if (refusal.kind === 'format') return [400, { message: `Invalid field: launchArgs[${refusal.index}] must look like -Name or -Name=value` }];
  return [400, { message: `Invalid field: launchArgs[${refusal.index}] sets an argument the agent controls` }];
}

describe('the launch-argument rule', () => {
  it('is the same in the settings API as in checkLaunchArgs', async () => {
    const a = await f.account();
    for (const launchArgs of SAMPLES) {
      const res = answer(await f.patch(`/projects/${a.projectId}/settings`, { apiKey: a.apiKey, userId: a.userId, launchArgs }));
      expect([launchArgs, ...res]).toEqual([launchArgs, ...expected(launchArgs)]);
    }
    expect(SAMPLES.filter((s) => checkLaunchArgs(s) === undefined)).toHaveLength(3);
  });
});
