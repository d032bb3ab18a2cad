import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    setupFiles: ['test/setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Two files at once on these 2-core machines: many tests wait on child processes and sockets.
    maxWorkers: 2,
  },
});
