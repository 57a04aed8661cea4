#!/usr/bin/env node
// Runs a command (the test suite) inside a fresh network namespace with only loopback up, so
// WebRTC peers — which gather candidates on every interface — can only ever reach 127.0.0.1,
// and nothing a test does can leave the machine. Root uses `unshare -n`; others `unshare -rn`.
// Where namespaces are unavailable it says so loudly and runs the command as it is.
import { spawnSync } from 'node:child_process';

const command = process.argv.slice(2);
if (command.length === 0) {
  console.error('usage: node test/run-isolated.mjs <command> [args…]');
  process.exit(2);
}

function run(argv) {
  const r = spawnSync(argv[0], argv.slice(1), { stdio: 'inherit' });
  if (r.error) return { code: 127, error: r.error };
  return { code: r.status ?? 1 };
}

if (process.env.PIXELFLEET_NETNS === '1') process.exit(run(command).code);

const unshareFlag = process.getuid?.() === 0 ? '-n' : '-rn';
const probe = spawnSync('unshare', [unshareFlag, 'ip', 'link', 'set', 'lo', 'up'], { stdio: 'ignore' });
if (probe.status !== 0) {
  console.error('!! run-isolated: cannot create a network namespace (unshare/ip missing or not permitted);');
  console.error('!! running the tests in the host network namespace instead (they still bind 127.0.0.1 only).');
  process.exit(run(command).code);
}
const script = 'ip link set lo up && exec "$@"';
const result = spawnSync('unshare', [unshareFlag, '--', 'sh', '-c', script, 'sh', ...command], {
  stdio: 'inherit',
  env: { ...process.env, PIXELFLEET_NETNS: '1' },
});
process.exit(result.status ?? 1);
