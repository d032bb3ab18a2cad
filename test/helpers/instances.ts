import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DeliveryReceiver } from '../../src/testing/index.js';
import { startGatewayProcess, type StartedGateway } from './gateway-process.js';
import type { TestRedis } from './redis.js';

export type Cleanups = (() => Promise<void> | void)[];

/** What the gateway processes of one test share: a fresh key prefix on the file's Redis, and one receiver of their deliveries. */
export async function sharedInstanceEnv(
  redis: TestRedis,
  cleanups: Cleanups,
  env: Record<string, string> = {},
): Promise<{ receiver: DeliveryReceiver; shared: Record<string, string> }> {
  const receiver = await DeliveryReceiver.start();
  cleanups.push(() => receiver.close());
  return { receiver, shared: { THREADLINE_REDIS_URL: redis.url, THREADLINE_REDIS_PREFIX: redis.prefix(), THREADLINE_WEBHOOK_DELIVERY_URL: receiver.url, ...env } };
}

/** A gateway process named `name` (its instance id) with a data dir of its own, both gone after the test. */
export async function startInstanceProcess(name: string, env: Record<string, string>, cleanups: Cleanups): Promise<StartedGateway & { readonly dataDir: string }> {
  const dataDir = mkdtempSync(join(tmpdir(), `threadline-${name}-`));
  cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
  const started = await startGatewayProcess({ ...env, THREADLINE_DATA_DIR: dataDir, THREADLINE_INSTANCE_ID: name }, (cleanup) => cleanups.push(cleanup));
  return { ...started, dataDir };
}

/** Each chat's replies in the order they first arrived, one a delivery id (a copy sent again after a crash counts once). */
export function arrivalOrder(receiver: DeliveryReceiver): Map<string, string[]> {
  const seen = new Set<string>();
  const byChat = new Map<string, string[]>();
  for (const { body } of receiver.received) {
    if (seen.has(body.idempotency_key)) continue;
    seen.add(body.idempotency_key);
    byChat.set(body.chat_id, [...(byChat.get(body.chat_id) ?? []), body.text]);
  }
  return byChat;
}
