// One lint setup for the whole repository: type-aware TypeScript rules (no floating
// promises) and import-x's cycle check, which keeps package dependency directions honest.
import tseslint from 'typescript-eslint';
import importX from 'eslint-plugin-import-x';

/** A relative import that climbs to a package folder and into its src/ (`../../agent/src/relay/x`). */
const NO_DEEP_RELATIVE = {
  regex: String.raw`^(\.\./)+(common|proto|signaling|build-archive|control-plane|agent|web-player|dashboard)/src(/|$)`,
  message: "Import another package through its door (@pixelfleet/<name>, or its /test-support subpath), not its src/.",
};

export default tseslint.config(
  { ignores: ['**/node_modules/**', 'proto/src/gen/**', '**/dist/**', 'web-player/public/**'] },
  {
    files: ['**/*.{ts,tsx}'],
    extends: [tseslint.configs.recommendedTypeChecked],
    plugins: { 'import-x': importX },
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    settings: {
      // import-x must parse TypeScript itself to follow imports (no-cycle needs the graph).
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts', '.tsx'] },
      'import-x/extensions': ['.ts', '.tsx', '.js', '.mjs'],
      'import-x/resolver-next': [importX.createNodeResolver({ extensions: ['.ts', '.tsx', '.js', '.mjs'], conditionNames: ['source', 'default', 'module', 'import', 'require'] })],
    },
    rules: {
      // RecordedEvent never rejects (a failed store is logged): an event recorded in passing needs no await.
      '@typescript-eslint/no-floating-promises': ['error', { allowForKnownSafePromises: [{ from: 'file', name: 'RecordedEvent', path: 'control-plane/src/events/event-log.ts' }] }],
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'import-x/no-cycle': ['error', { ignoreExternal: true }],
      'no-restricted-syntax': [
        'error',
        { selector: 'ExportAllDeclaration', message: 'One door per package: name every export (no export *).' },
      ],
    },
  },
  {
    // Only the config modules read the environment (house style: parse config once).
    files: ['**/*.{ts,tsx}'],
    ignores: ['**/config.ts', '**/src/main.ts', 'test/**', '**/*.test.ts', 'vitest.config.ts'],
    rules: {
      'no-restricted-properties': ['error', { object: 'process', property: 'env', message: 'Read configuration through config.ts.' }],
    },
  },
  {
    // No relative import reaches into another package's src/ (from test/ or across packages):
    // other code goes through the package's door (`@pixelfleet/agent`, its `/test-support` subpath).
    files: ['**/*.{ts,tsx}'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [NO_DEEP_RELATIVE] }],
    },
  },
  {
    // The agent ships alone to Windows servers: it must not reach into the control plane.
    // Packages talk to each other only through their doors (src/index.ts).
    files: ['agent/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ group: ['@pixelfleet/control-plane', '@pixelfleet/*/*', '**/control-plane/**'] }, NO_DEEP_RELATIVE] }],
    },
  },
  {
    // Packages talk to each other only through their doors (src/index.ts).
    files: ['common/**/*.ts', 'proto/**/*.ts', 'signaling/**/*.ts', 'build-archive/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ group: ['@pixelfleet/*/*'] }, NO_DEEP_RELATIVE] }],
    },
  },
  {
    // The control plane never imports the agent (which would load the relay and werift); what both
    // need of a build's zip lives in @pixelfleet/build-archive.
    files: ['control-plane/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [{ name: '@pixelfleet/agent', message: 'The control plane does not import the agent: a build zip is @pixelfleet/build-archive.' }],
          patterns: [{ group: ['@pixelfleet/*/*', '@pixelfleet/agent'] }, NO_DEEP_RELATIVE],
        },
      ],
    },
  },
  {
    // The exceptions: the browser bundle takes signaling's dependency-free table of viewer closes and its SignallingJournal, and common's Clock, alone;
    // the Node side (bundle.ts) builds it with common's browser-bundle.
    files: ['web-player/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['@pixelfleet/*/*', '!@pixelfleet/signaling/viewer-closes', '!@pixelfleet/common/clock', '!@pixelfleet/signaling/signalling-journal', '!@pixelfleet/common/browser-bundle'] },
            NO_DEEP_RELATIVE,
          ],
        },
      ],
    },
  },
  {
    // The dashboard's Node side (bundle, shell) takes common (and its browser-bundle) alone; its
    // browser app takes nothing of the other packages or of Node: it talks to the control plane over HTTP only.
    files: ['dashboard/**/*.{ts,tsx}'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ group: ['@pixelfleet/*/*', '@pixelfleet/*', '!@pixelfleet/common', '!@pixelfleet/common/browser-bundle'] }, NO_DEEP_RELATIVE] }],
    },
  },
  {
    files: ['dashboard/src/app/**/*.{ts,tsx}'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ group: ['@pixelfleet/*', 'node:*'], message: 'Browser code: no workspace package, no Node module.' }] }],
    },
  },
);
