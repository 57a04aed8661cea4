// One test runner for the repository: unit tests sit beside their source (*.test.ts);
// cross-package integration and end-to-end tests live under test/.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['{proto,signaling,control-plane,agent,web-player}/src/**/*.test.ts', 'test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
  },
});
