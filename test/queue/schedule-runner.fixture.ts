// A gateway instance reduced to its schedule runner, to be killed with SIGKILL in the middle of a run.
// argv: redis URL, key prefix. Prints `running <delivery id>` when a run reaches its delivery, which never ends.
import { Redis } from 'ioredis';
import { RedisScheduleRunner } from '../../src/queue/redis-schedule-runner.js';
import { RedisKeys } from '../../src/store/redis/redis-keys.js';
import { installContext } from '../../src/telemetry/install-context.js';
import { LEASES, runnerServices } from './schedule-runner-parts.js';

installContext();
const [url, prefix] = process.argv.slice(2) as [string, string];
const keys = new RedisKeys(prefix);
const commands = new Redis(url, { maxRetriesPerRequest: 1 });
const deliverer = {
  deliver: (request: { readonly id: string }) => {
    process.stdout.write(`running ${request.id}\n`);
    return new Promise<void>(() => {});
  },
};
const runner = new RedisScheduleRunner({
  services: runnerServices(commands, keys, deliverer),
  commands,
  connection: () => new Redis(url, { maxRetriesPerRequest: null }),
  keys,
  work: true,
  ...LEASES,
});
await runner.start();
process.stdout.write('started\n');
