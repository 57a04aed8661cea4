// The chromium app as a customer's Linux build, served over HTTP for upload-file: its binary is a
// shell script that execs the app's launcher with the agent's Unreal command line, as
// writeMockAppBuild does for the mock app, and names the file the app writes its stats to.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeBuildZip } from '../build-zips';
import { REPO_ROOT } from '../cli-process';
import { listen, sendZip } from '../local-server';
import { STATS_FILE_ENV } from './command-line';

export const CHROMIUM_APP_BIN = join(REPO_ROOT, 'test/support/chromium-app/bin/chromium-app.mjs');

export interface ChromiumAppBuild {
  buildUrl: string;
  /** Where every app launched from this build appends its stats (app-stats.ts). */
  statsPath: string;
  /** Stops the server and removes the zip and the stats. */
  close(): Promise<void>;
}

export async function serveChromiumAppBuild(): Promise<ChromiumAppBuild> {
  const dir = mkdtempSync(join(tmpdir(), 'pf-chromium-app-build-'));
  const statsPath = join(dir, 'app-stats.jsonl');
  const binary = `#!/bin/sh\n${STATS_FILE_ENV}='${statsPath}' exec '${process.execPath}' '${CHROMIUM_APP_BIN}' "$@"\n`;
  const zip = await writeBuildZip(dir, 'linux', { fileName: 'build.zip', linuxBinary: binary });
  const server = await listen((req, res) => sendZip(req, res, zip));
  return {
    buildUrl: `${server.origin}/build.zip`,
    statsPath,
    close: async () => {
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
