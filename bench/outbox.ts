/**
 * `npm run bench:outbox`: a claim pass over 200,000 pending deliveries, then RSS after
 * 20,000 chats with long ids, each in a process of its own so neither's heap skews the other.
 */
import { spawnSync } from 'node:child_process';

for (const [script, flags] of [
  ['bench/outbox-claim.ts', []],
  ['bench/outbox-memory.ts', ['--expose-gc']],
] as const) {
  const run = spawnSync(process.execPath, [...flags, '--import', 'tsx', script], { stdio: 'inherit' });
  if (run.status !== 0) process.exit(run.status ?? 1);
}
