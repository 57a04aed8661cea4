// One lint setup for the whole repository: type-aware TypeScript rules (no floating
// promises) and import-x's cycle check, which keeps package dependency directions honest.
import tseslint from 'typescript-eslint';
import importX from 'eslint-plugin-import-x';

export default tseslint.config(
  { ignores: ['**/node_modules/**', 'proto/src/gen/**', '**/dist/**', 'web-player/public/**'] },
  {
    files: ['**/*.ts'],
    extends: [tseslint.configs.recommendedTypeChecked],
    plugins: { 'import-x': importX },
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    settings: {
      // import-x must parse TypeScript itself to follow imports (no-cycle needs the graph).
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts'] },
      'import-x/extensions': ['.ts', '.js', '.mjs'],
      'import-x/resolver-next': [importX.createNodeResolver({ extensions: ['.ts', '.js', '.mjs'] })],
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
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
    files: ['**/*.ts'],
    ignores: ['**/config.ts', '**/src/main.ts', 'test/**', '**/*.test.ts', 'vitest.config.ts'],
    rules: {
      'no-restricted-properties': ['error', { object: 'process', property: 'env', message: 'Read configuration through config.ts.' }],
    },
  },
  {
    // The agent ships alone to Windows servers: it must not reach into the control plane.
    files: ['agent/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: ['@pixelfleet/control-plane', '**/control-plane/**'] }],
    },
  },
  {
    // Packages talk to each other only through their doors (src/index.ts). The one exception is the
    // browser bundle's dependency-free table of viewer closes (signaling's `./viewer-closes` export).
    files: ['proto/**/*.ts', 'signaling/**/*.ts', 'control-plane/**/*.ts', 'agent/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: ['@pixelfleet/*/*'] }],
    },
  },
  {
    files: ['web-player/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: ['@pixelfleet/*/*', '!@pixelfleet/signaling/viewer-closes'] }],
    },
  },
  {
    files: ['agent/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: ['@pixelfleet/control-plane', '@pixelfleet/*/*', '**/control-plane/**'] }],
    },
  },
);
