import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { APP_RECORDS_DIR, AppRecordStore, identifyProcess, type AppRecord } from './app-records';
import { parseProcStat, readBootIdentity, readProcessStat } from './process-identity';

let dataDir: string;
let store: AppRecordStore;
const children: number[] = [];

beforeEach(() => {
  dataDir = mkdtempSync(join(tmpdir(), 'pf-records-'));
  store = new AppRecordStore(dataDir);
});

afterEach(() => {
  for (const pid of children.splice(0)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  rmSync(dataDir, { recursive: true, force: true });
});

function record(extra: Partial<AppRecord> = {}): AppRecord {
  return {
    id: store.newId(),
    sessionId: 'ses_1',
    uploadId: 'upl_1',
    executable: '/opt/game/Game.sh',
    buildDir: '/data/builds/upl_1',
    platform: 'linux',
    recordedAtMs: 1_700_000_000_000,
    process: undefined,
    windowsPid: undefined,
    ...extra,
  };
}

describe('AppRecordStore', () => {
  it('saves one file per app under <dataDir>/apps, loads it back as written, and removes it', () => {
    const launching = record();
    store.save(launching);
    expect(readdirSync(join(dataDir, APP_RECORDS_DIR))).toEqual([`${launching.id}.json`]);
    expect(store.load()).toEqual({ records: [launching], unreadable: [] });

    const spawned = { ...launching, process: { pid: 4242, pgid: 4242, startTicks: '123456', bootId: 'b-1', bootTimeS: 1_700_000_000, exe: '/opt/game/Game' } };
    store.save(spawned);
    expect(store.load().records).toEqual([spawned]);
    // The write went through a temp file that is gone once it is in place.
    expect(readdirSync(join(dataDir, APP_RECORDS_DIR))).toEqual([`${launching.id}.json`]);

    store.remove(launching.id);
    store.remove(launching.id);
    expect(store.load()).toEqual({ records: [], unreadable: [] });
  });

  it('loads nothing when the folder does not exist yet', () => {
    expect(store.load()).toEqual({ records: [], unreadable: [] });
  });

  it('ignores (and deletes) the torn temp file of a write that died, keeping the whole record it would have replaced', () => {
    const whole = record();
    store.save(whole);
    const dir = join(dataDir, APP_RECORDS_DIR);
    const torn = `${whole.id}.json.99999.tmp`;
    writeFileSync(join(dir, torn), readFileSync(join(dir, `${whole.id}.json`), 'utf8').slice(0, 40));
    const orphanTemp = `${store.newId()}.json.88888.tmp`;
    writeFileSync(join(dir, orphanTemp), '{"version":1,"id":');

    expect(store.load()).toEqual({ records: [whole], unreadable: [] });
    expect(readdirSync(dir)).toEqual([`${whole.id}.json`]);
  });

  it('reports a record that does not parse as unreadable, with the id its file name carries', () => {
    const dir = join(dataDir, APP_RECORDS_DIR);
    mkdirSync(dir, { recursive: true });
    const truncatedId = store.newId();
    writeFileSync(join(dir, `${truncatedId}.json`), '{"version":1,"id":"');
    const wrongShapeId = store.newId();
    writeFileSync(join(dir, `${wrongShapeId}.json`), JSON.stringify({ version: 1, id: wrongShapeId, sessionId: 7 }));
    const mismatchedId = store.newId();
    writeFileSync(join(dir, `${mismatchedId}.json`), JSON.stringify({ ...record(), version: 1 }));
    writeFileSync(join(dir, 'notes.txt'), 'not a record');

    const { records, unreadable } = store.load();
    expect(records).toEqual([]);
    expect(unreadable.map((u) => u.id).sort()).toEqual([truncatedId, wrongShapeId, mismatchedId].sort());
    expect(unreadable.find((u) => u.id === mismatchedId)?.problem).toBe('the id inside does not match the file name');
  });
});

describe('AppRecordStore writes survive being killed mid-write', () => {
  it('a writer killed with SIGKILL at any moment leaves a whole record (old or new) and at most a temp file the next load drops', async () => {
    const moduleUrl = new URL('./app-records.ts', import.meta.url).href;
    // Rewrites one large record as fast as it can, alternating two versions.
    const writer = `
      import { AppRecordStore } from ${JSON.stringify(moduleUrl)};
      const store = new AppRecordStore(process.argv[1]);
      const base = { id: process.argv[2], sessionId: 'ses_1', uploadId: 'upl_1', buildDir: undefined, platform: 'linux', recordedAtMs: 1, process: undefined, windowsPid: undefined };
      for (let i = 0; ; i++) {
        store.save({ ...base, executable: (i % 2 ? 'a' : 'b').repeat(256 * 1024) });
        if (i === 1) console.log('writing');
      }`;
    const id = store.newId();
    for (let round = 0; round < 4; round++) {
      const child = spawn(process.execPath, ['--conditions=source', '--import', 'tsx', '--input-type=module', '-e', writer, dataDir, id], { cwd: new URL('.', import.meta.url), stdio: ['ignore', 'pipe', 'inherit'] });
      await new Promise<void>((resolve) => child.stdout.once('data', () => resolve()));
      // Any moment will do; a few milliseconds in, a write is usually under way.
      await new Promise((resolve) => setTimeout(resolve, 3 + round * 7));
      child.kill('SIGKILL');
      await new Promise((resolve) => child.once('exit', resolve));
      const { records, unreadable } = store.load();
      expect(unreadable).toEqual([]);
      expect(records).toHaveLength(1);
      expect(records[0]!.executable).toMatch(/^(a{262144}|b{262144})$/);
      expect(readdirSync(join(dataDir, APP_RECORDS_DIR))).toEqual([`${id}.json`]);
    }
  }, 30_000);
});

describe('identifyProcess (Linux /proc)', () => {
  it("records a live process's start time, group, binary and boot, as /proc shows them", async () => {
    const child = spawn('sleep', ['30'], { detached: true, stdio: 'ignore' });
    children.push(child.pid!);
    await new Promise((resolve) => child.once('spawn', resolve));
    const identity = identifyProcess(child.pid!, 'linux');
    const stat = readProcessStat(child.pid!)!;
    expect(identity).toEqual({
      pid: child.pid,
      pgid: child.pid,
      startTicks: stat.startTicks,
      bootId: readBootIdentity().bootId,
      bootTimeS: readBootIdentity().bootTimeS,
      exe: realpathSync(execFileSync('sh', ['-c', 'command -v sleep'], { encoding: 'utf8' }).trim()),
    });
    expect(identity.startTicks).toMatch(/^\d+$/);
    expect(identity.bootTimeS).toBeGreaterThan(1_000_000_000);
  });

  it('records the pid and group alone off Linux (nothing there proves who the pid is later)', () => {
    expect(identifyProcess(4242, 'darwin')).toEqual({ pid: 4242, pgid: 4242, startTicks: undefined, bootId: undefined, bootTimeS: undefined, exe: undefined });
  });
});

describe('parseProcStat', () => {
  it('counts fields from the last parenthesis, so a command name with spaces and parentheses cannot shift them', () => {
    const rest = Array.from({ length: 50 }, (_, i) => String(i + 3));
    rest[0] = 'S';
    rest[2] = '777';
    rest[19] = '987654321';
    expect(parseProcStat(42, `42 (evil) name (x) ${rest.join(' ')}`)).toEqual({ pid: 42, state: 'S', pgid: 777, startTicks: '987654321' });
    expect(parseProcStat(42, 'garbage')).toBeUndefined();
  });
});
