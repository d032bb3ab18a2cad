import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterEach, describe, expect, it } from 'vitest';
import { DeliveryReceiver } from '../../src/testing/index.js';

const root = new URL('../..', import.meta.url).pathname;
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface GatewayProcess {
  readonly child: ChildProcess;
  readonly url: string;
  readonly exited: Promise<number | null>;
}

/** Runs `npm start`'s command as a child process and waits for its banner. */
async function startProcess(env: Record<string, string>): Promise<GatewayProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', '--import', './src/telemetry/register.ts', 'src/cli/main.ts'], {
    cwd: root,
    env: { ...process.env, PORT: '0', THREADLINE_LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  cleanups.push(() => {
    child.kill('SIGKILL');
  });
  for await (const line of createInterface({ input: child.stdout! })) {
    const match = /listening on (http:\/\/\S+)/.exec(line);
    if (match) return { child, url: match[1]!, exited };
  }
  throw new Error(`gateway exited before its banner (code ${await exited})`);
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
});
