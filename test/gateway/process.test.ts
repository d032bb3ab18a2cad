import Database from 'better-sqlite3';
import type { ChildProcess } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DeliveryReceiver } from '../../src/testing/index.js';
import { until } from '../helpers/gateway.js';
import { collectOutput, spawnGateway, startGatewayProcess, type StartedGateway } from '../helpers/gateway-process.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

type GatewayProcess = StartedGateway;

function spawnGatewayWith(env: Record<string, string>, stderr: 'inherit' | 'pipe'): ChildProcess {
  return spawnGateway({ ...process.env, PORT: '0', THREADLINE_LOG_LEVEL: 'warn', ...env }, stderr);
}

/** Runs `npm start`'s command as a child process and waits for its banner. */
function startProcess(env: Record<string, string>): Promise<GatewayProcess> {
  return startGatewayProcess(env, (cleanup) => cleanups.push(cleanup));
}

/** Runs the gateway expecting it to refuse to start: its exit code and what it wrote to stderr. */
async function failedStart(env: Record<string, string>): Promise<{ code: number | null; stderr: string; stdout: string }> {
  const child = spawnGatewayWith(env, 'pipe');
  cleanups.push(() => {
    child.kill('SIGKILL');
  });
  const { stderr, stdout, exited } = collectOutput(child);
  const code = await exited;
  return { code, stderr: stderr(), stdout: stdout() };
}

/** What the store holds of each delivery, read beside the gateway. */
function deliveryRows(dataDir: string): unknown[] {
  const db = new Database(join(dataDir, 'threadline.db'), { readonly: true });
  try {
    return db.prepare('SELECT * FROM deliveries ORDER BY rowid').all();
  } finally {
    db.close();
  }
}

/** A delivery URL that takes each request and never answers it. */
async function neverAnswering(): Promise<{ url: string; requests: () => number }> {
  let requests = 0;
  const server = createServer(() => void requests++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => {
    server.closeAllConnections();
    server.close();
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, requests: () => requests };
}

async function post(url: string, body: object): Promise<number> {
  const response = await fetch(`${url}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  await response.body?.cancel();
  return response.status;
}

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'threadline-process-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

describe('the gateway process', () => {
  it('loses nothing it accepted when killed with SIGKILL: each reply is delivered once after a restart', async () => {
    const receiver = await DeliveryReceiver.start();
    cleanups.push(() => receiver.close());
    receiver.failEvery(503);
    const env = {
      THREADLINE_DATA_DIR: tempDir(),
      THREADLINE_WEBHOOK_DELIVERY_URL: receiver.url,
      // Refused replies are retried every 20 ms until the kill: at that moment some wait for
      // their retry and some are being sent (leased); both must arrive once after the restart.
      THREADLINE_DELIVERY_BACKOFF_MS: '20',
      THREADLINE_DELIVERY_BACKOFF_MAX_MS: '20',
      THREADLINE_DELIVERY_MAX_ATTEMPTS: '1000',
      THREADLINE_CONCURRENCY: '1',
    };
    const first = await startProcess(env);
    const texts = Array.from({ length: 40 }, (_, i) => `before the crash ${i}`);
    const statuses = await Promise.all(texts.map((text, i) => post(first.url, { chat_id: `chat:${i % 5}`, text })));
    expect(statuses.every((status) => status === 202)).toBe(true);
    // Some turns have run and their replies wait in the outbox; others are still queued.
    while (receiver.attempts < 3) await new Promise((resolve) => setTimeout(resolve, 10));
    first.child.kill('SIGKILL');
    await first.exited;

    receiver.failEvery(undefined);
    await startProcess(env);
    const delivered = await receiver.waitFor(texts.length);
    expect(delivered.map((d) => d.body.text).sort()).toEqual([...texts].sort());
    expect(receiver.received).toHaveLength(texts.length);
  });

  it('on SIGTERM stops intake, finishes its work, flushes spans and exits 0', async () => {
    const receiver = await DeliveryReceiver.start();
    cleanups.push(() => receiver.close());
    const dataDir = tempDir();
    const gateway = await startProcess({ THREADLINE_DATA_DIR: dataDir, THREADLINE_WEBHOOK_DELIVERY_URL: receiver.url });
    const statuses = await Promise.all(
      Array.from({ length: 30 }, (_, i) => post(gateway.url, { chat_id: `c${i % 3}`, thread_id: 'th', text: `t${i}` })),
    );
    expect(statuses.every((status) => status === 202)).toBe(true);
    gateway.child.kill('SIGTERM');
    expect(await gateway.exited).toBe(0);
    expect(receiver.unique().size).toBe(30);

    const spans = readFileSync(join(dataDir, 'traces.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .flatMap((line) => JSON.parse(line).resourceSpans.flatMap((rs: any) => rs.scopeSpans.flatMap((ss: any) => ss.spans)));
    const messages = spans.filter((span: any) => span.name === 'gateway.message');
    expect(messages).toHaveLength(30);
    for (const span of messages) {
      const attributes = Object.fromEntries(span.attributes.map((a: any) => [a.key, a.value.stringValue]));
      expect(attributes['chat.id']).toMatch(/^c[012]$/);
      expect(attributes['chat.thread.id']).toBe('th');
    }
  });

  it('while draining answers /v1/health, refuses /v1/ready, and a second SIGINT (Ctrl-C under npm sends two) does not cut the drain short', async () => {
    const target = await neverAnswering();
    const gateway = await startProcess({
      THREADLINE_DATA_DIR: tempDir(),
      THREADLINE_WEBHOOK_DELIVERY_URL: target.url,
      // The send never ends: the drain lasts until this deadline, long enough to probe it.
      THREADLINE_SHUTDOWN_TIMEOUT_MS: '3000',
    });
    expect(await post(gateway.url, { chat_id: 'c', text: 'held' })).toBe(202);
    await until(() => target.requests() > 0);
    const probe = async (path: string) => {
      const response = await fetch(`${gateway.url}${path}`);
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    };
    expect((await probe('/v1/ready')).status).toBe(200);

    gateway.child.kill('SIGINT');
    await until(async () => (await probe('/v1/ready')).status === 503);
    expect((await probe('/v1/ready')).body['code']).toBe('TL_SHUTTING_DOWN');
    expect(await probe('/v1/health')).toMatchObject({ status: 200, body: { status: 'stopping' } });
    gateway.child.kill('SIGINT');
    expect(await gateway.exited).toBe(0);
  });

  it('refuses a second gateway on the same data dir: exit 1 naming the directory and the holder\'s pid', async () => {
    const dataDir = tempDir();
    const first = await startProcess({ THREADLINE_DATA_DIR: dataDir });
    const second = await failedStart({ THREADLINE_DATA_DIR: dataDir });
    expect(second.code).toBe(1);
    expect(second.stderr).toContain('TL_DATA_DIR_LOCKED');
    expect(second.stderr).toContain(dataDir);
    expect(second.stderr).toContain(`pid ${first.child.pid}`);
    expect(second.stdout).not.toContain('listening');
    // The first goes on untouched.
    expect(await post(first.url, { chat_id: 'c', text: 'still here' })).toBe(202);
  });

  it('fails on a port in use before it replays or sends anything', async () => {
    const dataDir = tempDir();
    const target = await neverAnswering();
    const first = await startProcess({ THREADLINE_DATA_DIR: dataDir, THREADLINE_WEBHOOK_DELIVERY_URL: target.url });
    expect(await post(first.url, { chat_id: 'c', text: 'in flight' })).toBe(202);
    while (target.requests() === 0) await new Promise((resolve) => setTimeout(resolve, 10));
    first.child.kill('SIGKILL');
    await first.exited;
    const before = deliveryRows(dataDir);
    expect(before).toHaveLength(1);

    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => void holder.close());
    const port = String((holder.address() as AddressInfo).port);
    const second = await failedStart({ THREADLINE_DATA_DIR: dataDir, THREADLINE_WEBHOOK_DELIVERY_URL: target.url, PORT: port });
    expect(second.code).toBe(1);
    expect(second.stderr).toContain('TL_LISTEN_FAILED');
    expect(second.stderr).toContain(`127.0.0.1:${port}`);
    // Nothing released, resent or run: the store is as the crash left it.
    expect(deliveryRows(dataDir)).toEqual(before);
    expect(target.requests()).toBe(1);
  });

  it('under load, killed with SIGKILL, delivers every accepted message at least once, repeats under one key, in order per chat', async () => {
    const receiver = await DeliveryReceiver.start();
    cleanups.push(() => receiver.close());
    const env = { THREADLINE_DATA_DIR: tempDir(), THREADLINE_WEBHOOK_DELIVERY_URL: receiver.url };
    const first = await startProcess(env);
    const chats = Array.from({ length: 8 }, (_, i) => `load:${i}`);
    const accepted = new Map<string, string[]>(chats.map((chat) => [chat, []]));
    /** Posts whose answer the kill cut off: taken or not, the client cannot know. */
    const unanswered = new Set<string>();
    let killed = false;
    // Each chat posts in order; the chats at once. The kill lands while they are under way.
    const posting = chats.map(async (chat) => {
      for (let i = 0; !killed && i < 200; i++) {
        const text = `${chat} #${i}`;
        const status = await post(first.url, { chat_id: chat, text }).catch(() => 0);
        if (status === 202) accepted.get(chat)!.push(text);
        else unanswered.add(text);
      }
    });
    while (receiver.attempts < 300) await new Promise((resolve) => setTimeout(resolve, 5));
    first.child.kill('SIGKILL');
    killed = true;
    await first.exited;
    await Promise.all(posting);

    await startProcess(env);
    const arrived = () => new Set(receiver.received.map((r) => r.body.text));
    const missing = () => [...accepted.values()].flat().filter((text) => !arrived().has(text));
    for (const deadline = Date.now() + 30_000; missing().length > 0; ) {
      if (Date.now() > deadline) throw new Error(`${missing().length} accepted messages never arrived: ${missing().slice(0, 5).join(', ')}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const keyOf = new Map<string, string>();
    for (const { body } of receiver.received) {
      expect(keyOf.get(body.text) ?? body.idempotency_key).toBe(body.idempotency_key);
      keyOf.set(body.text, body.idempotency_key);
    }
    for (const [chat, texts] of accepted) {
      const firstArrivals = [...new Set(receiver.received.filter((r) => r.body.chat_id === chat).map((r) => r.body.text))];
      // Only a post the kill left unanswered may have been taken besides the accepted ones.
      expect(firstArrivals.filter((text) => !unanswered.has(text))).toEqual(texts);
    }
  });
});
