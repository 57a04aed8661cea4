#!/usr/bin/env node
// Regenerates the TypeScript code and descriptor set from the .proto files with buf + ts-proto.
//   (no flag)   write src/gen/ and descriptor.binpb
//   --check     lint, then generate into a temp dir and fail if the committed code differs
//   --breaking  compare against the committed baseline (breaking-baseline.binpb) or main
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const protoDir = dirname(dirname(fileURLToPath(import.meta.url)));
const require = createRequire(import.meta.url);
const bufBin = join(dirname(require.resolve('@bufbuild/buf/package.json')), 'bin', 'buf');

function buf(args, cwd = protoDir) {
  try {
    execFileSync(process.execPath, [bufBin, ...args], { cwd, stdio: 'inherit' });
  } catch (err) {
    // buf has already printed its findings; exit with its status and no Node stack trace.
    console.error(`proto: buf ${args[0]} failed (exit ${err.status ?? 'unknown'})`);
    process.exit(typeof err.status === 'number' && err.status !== 0 ? err.status : 1);
  }
}

function listFiles(dir) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true })
    .map((f) => join(dir, String(f)))
    .filter((f) => statSync(f).isFile())
    .map((f) => relative(dir, f))
    .sort();
}

function generateInto(outRoot) {
  // buf.gen.yaml writes to src/gen relative to the module; copy the module to generate elsewhere.
  const work = mkdtempSync(join(tmpdir(), 'pf-proto-'));
  try {
    cpSync(join(protoDir, 'pixelfleet'), join(work, 'pixelfleet'), { recursive: true });
    for (const f of ['buf.yaml', 'buf.gen.yaml']) cpSync(join(protoDir, f), join(work, f));
    // The plugin path in buf.gen.yaml is relative to the proto folder; point it at the real one.
    const gen = readFileSync(join(work, 'buf.gen.yaml'), 'utf8').replace(
      '../node_modules/ts-proto/protoc-gen-ts_proto',
      join(dirname(require.resolve('ts-proto/package.json')), 'protoc-gen-ts_proto'),
    );
    writeFileSync(join(work, 'buf.gen.yaml'), gen);
    buf(['generate'], work);
    buf(['build', '-o', join(work, 'descriptor.binpb')], work);
    rmSync(join(outRoot, 'src', 'gen'), { recursive: true, force: true });
    cpSync(join(work, 'src', 'gen'), join(outRoot, 'src', 'gen'), { recursive: true });
    cpSync(join(work, 'descriptor.binpb'), join(outRoot, 'descriptor.binpb'));
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

const mode = process.argv[2];
if (mode === '--check') {
  buf(['lint']);
  const out = mkdtempSync(join(tmpdir(), 'pf-proto-check-'));
  try {
    generateInto(out);
    const stale = [];
    const want = [...listFiles(join(out, 'src', 'gen')).map((f) => join('src', 'gen', f)), 'descriptor.binpb'];
    const have = [...listFiles(join(protoDir, 'src', 'gen')).map((f) => join('src', 'gen', f)), 'descriptor.binpb'];
    for (const f of new Set([...want, ...have])) {
      const a = join(out, f);
      const b = join(protoDir, f);
      if (!existsSync(a) || !existsSync(b) || !readFileSync(a).equals(readFileSync(b))) stale.push(f);
    }
    if (stale.length > 0) {
      console.error(`proto: generated code is stale (${stale.join(', ')}); run npm run proto:generate`);
      process.exit(1);
    }
    console.log('proto: lint clean, generated code up to date');
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
} else if (mode === '--breaking') {
  // The baseline image is committed whenever the contract is released (npm run proto:baseline
  // writes it); without one, compare against the main branch of the enclosing git repository.
  const baseline = join(protoDir, 'breaking-baseline.binpb');
  if (existsSync(baseline)) {
    buf(['breaking', '--against', baseline]);
  } else {
    buf(['breaking', '--against', '../.git#branch=main,subdir=proto']);
  }
  console.log('proto: no breaking changes');
} else if (mode === '--baseline') {
  buf(['build', '-o', join(protoDir, 'breaking-baseline.binpb')]);
  console.log('proto: wrote breaking-baseline.binpb');
} else if (mode === undefined) {
  buf(['lint']);
  generateInto(protoDir);
  console.log('proto: generated src/gen and descriptor.binpb');
} else {
  console.error(`unknown flag ${mode}; use --check, --breaking or --baseline`);
  process.exit(2);
}
