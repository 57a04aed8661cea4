// One test runner for the repository: unit tests sit beside their source (*.test.ts);
// cross-package integration and end-to-end tests live under test/.
import { defineConfig } from 'vitest/config';

// Workspace packages export their TypeScript sources under the "source" condition and their
// compiled dist/ by default (what the production binaries load): tests run the sources. No
// "module" condition: dependencies resolve as Node resolves them in production (the AWS SDK's
// packages put a bundler-only build, with extensionless imports, under "module").
const conditions = ['source', 'node', 'development|production'];

export default defineConfig({
  resolve: { conditions },
  ssr: { resolve: { conditions, externalConditions: ['source'] } },
  test: {
    include: ['{common,proto,signaling,build-archive,control-plane,agent,web-player,dashboard}/src/**/*.test.ts', 'test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    globalSetup: ['test/support/build-dist.mjs'],
  },
});
