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
import { existsSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const PACKAGES = ['proto', 'signaling', 'control-plane', 'agent', 'web-player'];

const isTest = (name) => /\.test\.ts$/.test(name) || /\.d\.ts$/.test(name);
// Browser code, bundled from its sources by esbuild when the viewer page is first served
// (web-player/src/bundle.ts), so it has no place in dist.
const SKIP_DIRS = [join('web-player', 'src', 'player')];

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
  // --if-stale: only the packages whose dist/ is older than their sources (npm start, benchmarks).
  const packages = process.argv.includes('--if-stale') ? stalePackages() : PACKAGES;
  const started = performance.now();
  try {
    const count = packages.length === 0 ? 0 : build(packages);
    if (packages.length > 0) console.log(`built ${count} files into ${packages.map((p) => `${p}/dist`).join(', ')} in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  } catch (err) {
    console.error(err instanceof Error ? err.message : String(err));
    process.exitCode = 1;
  }
}
