/**
 * How long an instance takes from its spawn to ready (the `threadline ready` banner, intake
 * open) when it joins a running instance under load, against one starting a cluster of its own
 * (a fresh prefix) on the same machine at the same time. Both share the machine with the busy
 * instance alike, so the difference is what joining costs. Rounds alternate the order; medians.
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
  const env = (prefix: string, id: string) => ({ THREADLINE_REDIS_URL: redis.url, THREADLINE_REDIS_PREFIX: prefix, THREADLINE_INSTANCE_ID: id });
  /** Spawn to the ready banner of an instance on `prefix`, then its stop. */
  const timeStart = async (name: string, prefix: string): Promise<number> => {
    const startedAt = performance.now();
    const server = await startServer(gatewaySpec(name, options, env(prefix, name)));
    const ms = performance.now() - startedAt;
    await stopServer(server);
    return ms;
  };
  try {
    for (let round = 0; round < options.rounds; round++) {
      // A cluster of one instance under a steady load; both starts happen beside it, so both share the machine with it alike.
      const cluster = `start-cluster-${round}`;
      const running = await startServer(gatewaySpec(`start-running-${round}`, options, env(cluster, 'running')));
      const load = steadyLoad(running.url, options.rate);
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      const alone = () => timeStart(`start-alone-${round}`, `start-alone-${round}`).then((ms) => result.aloneMs.push(ms));
      const beside = () => timeStart(`start-beside-${round}`, cluster).then((ms) => result.besideMs.push(ms));
      // Alone: a cluster of its own (a fresh prefix); beside: joining the busy one. Which goes first alternates.
      for (const start of round % 2 === 0 ? [alone, beside] : [beside, alone]) await start();
      await load.stop();
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
