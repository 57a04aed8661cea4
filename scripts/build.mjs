#!/usr/bin/env node
// npm run build: compiles every workspace package's src/**/*.ts (tests excepted) to <pkg>/dist/**/*.js
// with source maps, for the production binaries (`pixelfleet`, `pixelfleet-agent`), which run dist
// without tsx. Type checking is `npm run typecheck`'s job: the sources are written for
// `isolatedModules`, so each file compiles on its own with TypeScript's transpiler (≈1 s for the
// whole repository instead of a full program's type check).
//
// The sources import each other without extensions (`moduleResolution: Bundler`), which Node's ESM
// loader does not accept; an after-emit transform rewrites each relative specifier to the file it
// names (`./clock` → `./clock.js`, `./db` → `./db/index.js`). A specifier naming no source file fails
// the build.
//
// Then the agent bundle: dist/agent.cjs at the repository root, one CommonJS file with the agent,
// its workspace packages and its npm dependencies (what the Windows zip carries, what
// `node dist/agent.cjs run` and the end-to-end tests run). It is written by the agent's one bundler,
// `bundleAgent` (agent/src/package/agent-bundle.ts, loaded from the agent/dist just compiled), which
// `npm run package:agent` calls for the same file.
import { existsSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import ts from 'typescript';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const PACKAGES = ['common', 'proto', 'signaling', 'build-archive', 'control-plane', 'agent', 'web-player', 'dashboard'];

const isTest = (name) => /\.test\.ts$/.test(name) || /\.d\.ts$/.test(name);
// Browser code, bundled from its sources by esbuild when the viewer page or the dashboard is first
// served (web-player/src/bundle.ts, dashboard/src/bundle.ts), so it has no place in dist.
const SKIP_DIRS = [join('web-player', 'src', 'player'), join('dashboard', 'src', 'app')];

function sourceFiles(dir, root) {
  const out = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (!SKIP_DIRS.includes(relative(root, path))) out.push(...sourceFiles(path, root));
    }
    else if (entry.name.endsWith('.ts') && !isTest(entry.name)) out.push(path);
  }
  return out;
}

/** The .js path a relative specifier written in `fromFile` names, or undefined when no source file matches. */
function resolveSpecifier(fromFile, specifier) {
  const target = resolve(dirname(fromFile), specifier);
  if (/\.(m?js|json|node)$/.test(specifier)) return specifier; // already explicit
  if (specifier.endsWith('.ts') && existsSync(target)) return specifier.replace(/\.ts$/, '.js');
  if (existsSync(`${target}.ts`)) return `${specifier}.js`;
  if (existsSync(target) && statSync(target).isDirectory() && existsSync(join(target, 'index.ts'))) return `${specifier.replace(/\/$/, '')}/index.js`;
  return undefined;
}

function specifierRewriter(fileName, root, errors) {
  return (context) => {
    const f = context.factory;
    const rewrite = (literal) => {
      const text = literal.text;
      if (!text.startsWith('./') && !text.startsWith('../')) return literal;
      const resolved = resolveSpecifier(fileName, text);
      if (resolved === undefined) {
        errors.push(`${relative(root, fileName)}: cannot resolve '${text}'`);
        return literal;
      }
      return f.createStringLiteral(resolved);
    };
    const visit = (node) => {
      if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
        return f.updateImportDeclaration(node, node.modifiers, node.importClause, rewrite(node.moduleSpecifier), node.attributes);
      }
      if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
        return f.updateExportDeclaration(node, node.modifiers, node.isTypeOnly, node.exportClause, rewrite(node.moduleSpecifier), node.attributes);
      }
      if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword && node.arguments.length >= 1 && ts.isStringLiteralLike(node.arguments[0])) {
        return f.updateCallExpression(node, node.expression, node.typeArguments, [rewrite(node.arguments[0]), ...node.arguments.slice(1)]);
      }
      return ts.visitEachChild(node, visit, context);
    };
    return (sourceFile) => ts.visitNode(sourceFile, visit);
  };
}

function compilerOptions() {
  const config = ts.readConfigFile(join(ROOT, 'tsconfig.json'), ts.sys.readFile);
  if (config.error) throw new Error(ts.flattenDiagnosticMessageText(config.error.messageText, '\n'));
  const { options } = ts.convertCompilerOptionsFromJson(config.config.compilerOptions, ROOT);
  return { ...options, noEmit: false, sourceMap: true, inlineSources: false, declaration: false };
}

const STAMP = '.build-stamp';

/** The packages (folders of root) whose dist/ is missing or older than a source file, their package.json or this script. */
export function stalePackages(packages = PACKAGES, root = ROOT) {
  const script = statSync(fileURLToPath(import.meta.url)).mtimeMs;
  return packages.filter((pkg) => {
    const stamp = join(root, pkg, 'dist', STAMP);
    if (!existsSync(stamp)) return true;
    const built = statSync(stamp).mtimeMs;
    const inputs = [join(root, pkg, 'package.json'), ...sourceFiles(join(root, pkg, 'src'), root)];
    return script > built || inputs.some((file) => statSync(file).mtimeMs > built);
  });
}

/** Where the agent bundle is written, relative to the repository root. */
export const AGENT_BUNDLE = join('dist', 'agent.cjs');

/** The workspace folders whose sources go into the agent bundle: the agent and the @pixelfleet packages it depends on, transitively. */
export function bundledPackages(root = ROOT) {
  const folders = new Map(PACKAGES.map((pkg) => [JSON.parse(readFileSync(join(root, pkg, 'package.json'), 'utf8')).name, pkg]));
  const out = [];
  const visit = (pkg) => {
    if (out.includes(pkg)) return;
    out.push(pkg);
    const { dependencies = {} } = JSON.parse(readFileSync(join(root, pkg, 'package.json'), 'utf8'));
    for (const name of Object.keys(dependencies)) if (folders.has(name)) visit(folders.get(name));
  };
  visit('agent');
  return out;
}

/**
 * Whether the agent bundle (root/dist/agent.cjs) or its source map is missing, or the bundle is
 * older than what it is made from, by stalePackages' rule (a source file of a bundled package, its
 * package.json, this script), plus package-lock.json: the bundle holds the npm dependencies too.
 */
export function bundleStale(root = ROOT) {
  const bundle = join(root, AGENT_BUNDLE);
  if (!existsSync(bundle) || !existsSync(`${bundle}.map`)) return true;
  const built = statSync(bundle).mtimeMs;
  const lock = join(root, 'package-lock.json');
  const inputs = [fileURLToPath(import.meta.url), ...(existsSync(lock) ? [lock] : [])];
  for (const pkg of bundledPackages(root)) inputs.push(join(root, pkg, 'package.json'), ...sourceFiles(join(root, pkg, 'src'), root));
  return inputs.some((file) => statSync(file).mtimeMs > built);
}

/** Writes the agent bundle (root/dist/agent.cjs) with the agent's bundler from agent/dist (compile the agent first). Returns its path. */
export async function buildAgentBundle(root = ROOT) {
  const { bundleAgent } = await import(pathToFileURL(join(root, 'agent', 'dist', 'package', 'agent-bundle.js')).href);
  const bundle = join(root, AGENT_BUNDLE);
  await bundleAgent(bundle);
  return bundle;
}

/**
 * Compiles the packages (folders of root) into their dist/ folders (emptied first), with this
 * repository's compiler options. Returns the number of files written; throws listing every error.
 */
export function build(packages = PACKAGES, root = ROOT) {
  const options = compilerOptions();
  const errors = [];
  let count = 0;
  for (const pkg of packages) {
    const src = join(root, pkg, 'src');
    const dist = join(root, pkg, 'dist');
    rmSync(dist, { recursive: true, force: true });
    for (const file of sourceFiles(src, root)) {
      const rel = relative(src, file);
      const outFile = join(dist, rel.replace(/\.ts$/, '.js'));
      const mapName = `${outFile.split(/[\\/]/).pop()}.map`;
      const result = ts.transpileModule(readFileSync(file, 'utf8'), {
        fileName: file,
        compilerOptions: options,
        reportDiagnostics: true,
        transformers: { after: [specifierRewriter(file, root, errors)] },
      });
      for (const d of result.diagnostics ?? []) errors.push(`${relative(root, file)}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`);
      const map = JSON.parse(result.sourceMapText);
      map.file = outFile.split(/[\\/]/).pop();
      map.sources = [relative(dirname(outFile), file).split('\\').join('/')];
      const js = result.outputText.replace(/\/\/# sourceMappingURL=.*$/m, `//# sourceMappingURL=${mapName}`);
      mkdirSync(dirname(outFile), { recursive: true });
      writeFileSync(outFile, js);
      writeFileSync(`${outFile}.map`, JSON.stringify(map));
      count++;
    }
    if (errors.length === 0) writeFileSync(join(dist, STAMP), '');
  }
  if (errors.length > 0) throw new Error(`build failed:\n${errors.join('\n')}`);
  return count;
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  // --if-stale: only the packages whose dist/ is older than their sources, and the bundle only when
  // stale (npm start, benchmarks).
  const ifStale = process.argv.includes('--if-stale');
  const packages = ifStale ? stalePackages() : PACKAGES;
  const seconds = (since) => ((performance.now() - since) / 1000).toFixed(1);
  try {
    let started = performance.now();
    const count = packages.length === 0 ? 0 : build(packages);
    if (packages.length > 0) console.log(`built ${count} files into ${packages.map((p) => `${p}/dist`).join(', ')} in ${seconds(started)} s`);
    if (!ifStale || bundleStale()) {
      started = performance.now();
      const bundle = await buildAgentBundle();
      console.log(`bundled the agent into ${relative(process.cwd(), bundle) || bundle} in ${seconds(started)} s`);
    }
  } catch (err) {
    console.error(err instanceof Error ? err.message : String(err));
    process.exitCode = 1;
  }
}
