/**
 * How long an instance takes from its spawn to ready (the `threadline ready` banner, intake
 * open), alone on a fresh prefix, and beside a running instance of the same cluster under
 * load. Rounds interleave the two; medians are reported.
 */
import { startServer, stopServer } from '../gateway/servers.js';
import { gatewaySpec, type ConfigurationOptions } from './configurations.js';
import { startBenchRedis } from './redis-server.js';

export interface StartBesideOptions extends ConfigurationOptions {
  readonly rounds: number;
  /** Messages a second offered to the running instance while the other starts. */
  readonly rate: number;
}

export interface StartBesideResult {
  readonly aloneMs: number[];
  readonly besideMs: number[];
}

export async function measureStartBeside(options: StartBesideOptions): Promise<StartBesideResult> {
  const redis = await startBenchRedis({ appendonly: options.redisAppendonly });
  const result: StartBesideResult = { aloneMs: [], besideMs: [] };
  try {
    for (let round = 0; round < options.rounds; round++) {
      const env = (prefix: string, id: string) => ({ THREADLINE_REDIS_URL: redis.url, THREADLINE_REDIS_PREFIX: prefix, THREADLINE_INSTANCE_ID: id });
      // Alone: the cluster's first instance, on an empty prefix.
      const startedAt = performance.now();
      const alone = await startServer(gatewaySpec(`start-alone-${round}`, options, env(`start-alone-${round}`, 'alone')));
      result.aloneMs.push(performance.now() - startedAt);
      await stopServer(alone);

      // Beside: a running instance takes a steady load while the second starts.
      const running = await startServer(gatewaySpec(`start-running-${round}`, options, env(`start-beside-${round}`, 'running')));
      const load = steadyLoad(running.url, options.rate);
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      const besideAt = performance.now();
      const beside = await startServer(gatewaySpec(`start-beside-${round}`, options, env(`start-beside-${round}`, 'beside')));
      result.besideMs.push(performance.now() - besideAt);
      await load.stop();
      await stopServer(beside);
      await stopServer(running);
    }
  } finally {
    await redis.stop();
  }
  return result;
}

/** Posts `rate` messages a second to `url`, each to a chat of its own among 200, until stopped. */
function steadyLoad(url: string, rate: number): { stop(): Promise<void> } {
  let sent = 0;
  const inFlight = new Set<Promise<unknown>>();
  const timer = setInterval(() => {
    for (let i = 0; i < rate / 20; i++) {
      const n = sent++;
      const posted = fetch(`${url}/v1/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ chat_id: `busy-${n % 200}`, text: `busy ${n}` }),
      }).then((response) => response.body?.cancel(), () => undefined);
      inFlight.add(posted);
      void posted.finally(() => inFlight.delete(posted));
    }
  }, 50);
  return {
    async stop() {
      clearInterval(timer);
      await Promise.allSettled([...inFlight]);
    },
  };
}
