import { defineConfig } from 'vitest/config';

/**
 * Files whose timing is their subject or that start gateway processes of their own (signals,
 * instances killed mid-work, torture runs, many sessions): one at a time, after the rest, so no
 * other file competes with them for the CPU.
 */
const ALONE = [
  'test/process/**/*.test.ts',
  'test/distributed/**/*.test.ts',
  'test/bench/**/*.test.ts',
  'test/gateway/process.test.ts',
  'test/session/torture/processes.test.ts',
  'test/tools/many-sessions*.test.ts',
];

const shared = {
  setupFiles: ['test/setup.ts'],
  testTimeout: 60_000,
  hookTimeout: 60_000,
};

export default defineConfig({
  test: {
    projects: [
      // Two files at a time: most of a file's time is loading modules and waiting on I/O.
      { test: { ...shared, name: 'unit', include: ['test/**/*.test.ts'], exclude: ALONE, maxWorkers: 2, sequence: { groupOrder: 0 } } },
      { test: { ...shared, name: 'alone', include: ALONE, maxWorkers: 1, sequence: { groupOrder: 1 } } },
    ],
  },
});
