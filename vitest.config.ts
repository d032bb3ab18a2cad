import { configDefaults, defineConfig } from 'vitest/config';

/**
 * Files that measure time against short leases or tick gaps, or drive many gateway processes at
 * once (instances killed mid-work, signals under load, torture runs, many sessions): one at a
 * time, after the rest, so no other file competes with them for the CPU. Files that merely start
 * a gateway process and wait for it with generous timeouts run with the rest (SHARED_WORKERS).
 */
const ALONE = [
  'test/process/**/*.test.ts',
  'test/bench/**/*.test.ts',
  'test/gateway/process.test.ts',
  'test/session/torture/processes.test.ts',
  'test/tools/many-sessions*.test.ts',
];

/**
 * Files that wait on leases and ticks in Redis (instances killed mid-work, cron ticks): most of
 * their time is waiting for a lease to lapse or a tick to come, so two run at once, apart from
 * the rest and before the files that load the CPU.
 */
const PAIRED = ['test/distributed/**/*.test.ts', 'test/queue/redis-schedule-runner.test.ts'];

/**
 * What does not depend on the Node runtime (the package as packed, the docs against the code,
 * the served OpenAPI document against the committed one): `.ci/run` runs these on its first
 * runtime only, with the typecheck.
 */
const ONCE = [
  'test/package/**/*.test.ts',
  'test/docs.test.ts',
  'test/gateway/openapi.test.ts',
  'test/security/security-md.test.ts',
  // Chromium against the operator's page: the browser, not the runtime, is what it tests.
  'test/operator/operator-page-browser.test.ts',
];

/**
 * Files that start no server, store or process and leave no state behind: in worker threads,
 * which start faster than forked processes.
 */
const PURE = [
  'test/session/**/*.test.ts',
  'test/config/**/*.test.ts',
  'test/errors.test.ts',
  'test/layers.test.ts',
  'test/gateway/commands/command-arguments.test.ts',
  'test/deliveries/target-resolver.test.ts',
  'test/deliveries/delivery-minutes.test.ts',
  'test/operator/render-operator-page.test.ts',
  'test/forensics/{conversation-traces,find-misroutes,jaeger-json,lost-in-traces,otlp-json,span-tree,trace-file-source,trace-store-search}.test.ts',
];

/**
 * Files of the first group run at once: THREADLINE_TEST_WORKERS, default 3. Most of a file's
 * time is waiting on I/O and timers, so on a 2-core machine three at a time finished the Node 20
 * run in 385 s where two took about 450 s.
 */
const SHARED_WORKERS = Number(process.env['THREADLINE_TEST_WORKERS'] ?? 3);

const shared = {
  setupFiles: ['test/setup.ts'],
  testTimeout: 60_000,
  hookTimeout: 60_000,
};

export default defineConfig({
  test: {
    // Process tests run the gateway from dist/: built (incrementally) once before any file runs.
    globalSetup: ['test/build-dist.ts'],
    projects: [
      { test: { ...shared, name: 'unit', include: ['test/**/*.test.ts'], exclude: [...configDefaults.exclude, ...ALONE, ...PAIRED, ...ONCE, ...PURE], maxWorkers: SHARED_WORKERS, sequence: { groupOrder: 0 } } },
      { test: { ...shared, name: 'pure', include: PURE, exclude: [...configDefaults.exclude, ...ALONE], pool: 'threads', maxWorkers: SHARED_WORKERS, sequence: { groupOrder: 0 } } },
      { test: { ...shared, name: 'once', include: ONCE, maxWorkers: SHARED_WORKERS, sequence: { groupOrder: 0 } } },
      { test: { ...shared, name: 'paired', include: PAIRED, maxWorkers: 2, sequence: { groupOrder: 1 } } },
      { test: { ...shared, name: 'alone', include: ALONE, maxWorkers: 1, sequence: { groupOrder: 2 } } },
    ],
  },
});
