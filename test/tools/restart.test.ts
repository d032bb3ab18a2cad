import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DeliveryReceiver, FakeOpenAI, TEST_SECRETS, type ReceivedDelivery } from '../../src/testing/index.js';
import { until } from '../helpers/gateway.js';
import { startGatewayProcess, type StartedGateway } from '../helpers/gateway-process.js';
import { readOtlpSpans, type OtlpSpan } from '../helpers/otlp-file.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function startProcess(env: Record<string, string>): Promise<StartedGateway> {
  return startGatewayProcess(env, (cleanup) => cleanups.push(cleanup));
}

async function post(url: string, body: object): Promise<{ status: number; traceId: string }> {
  const response = await fetch(`${url}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${TEST_SECRETS.webhookToken}` }, body: JSON.stringify(body) });
  const answer = (await response.json()) as { trace_id?: string };
  return { status: response.status, traceId: answer.trace_id ?? '' };
}

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'threadline-restart-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function find(received: readonly ReceivedDelivery[], kind: string, text: string): ReceivedDelivery | undefined {
  return received.find((delivery) => delivery.body.kind === kind && delivery.body.text.includes(text));
}

describe('background work across a kill -9', () => {
  it('reports commands still running, commands that ended while down, and reminders due while down, at their origin, linked to it', async () => {
    const receiver = await DeliveryReceiver.start();
    cleanups.push(() => receiver.close());
    const dataDir = tempDir();
    const markers = tempDir();
    const env = {
      THREADLINE_DATA_DIR: dataDir,
      THREADLINE_WEBHOOK_DELIVERY_URL: receiver.url,
      THREADLINE_TERMINAL: '1',
      THREADLINE_ADMINS: '*',
      THREADLINE_WEBHOOK_TOKEN: TEST_SECRETS.webhookToken,
      OTEL_TRACES_EXPORTER: 'file',
    };
    const first = await startProcess(env);
    // Still running at the restart: it waits for a file the test writes once the second gateway runs.
    const running = await post(first.url, {
      chat_id: 'ops',
      thread_id: 'deploys',
      text: `/run while [ ! -f ${markers}/go ]; do sleep 0.05; done; echo still-running-done`,
    });
    // Ends while the gateway is down: the test waits for its marker before starting again.
    const ended = await post(first.url, {
      chat_id: 'ops',
      thread_id: 'builds',
      text: `/run while [ ! -f ${markers}/killed ]; do sleep 0.05; done; echo ended-while-down; touch ${markers}/ended`,
    });
    const reminder = await post(first.url, { chat_id: 'team', thread_id: 'standup', text: '/remind 2s reminder-while-down' });
    expect([running.status, ended.status, reminder.status]).toEqual([202, 202, 202]);
    // The three acknowledgements: the commands started and the reminder is stored.
    await receiver.waitFor(3);
    first.child.kill('SIGKILL');
    await first.exited;
    writeFileSync(join(markers, 'killed'), '');
    await until(() => existsSync(join(markers, 'ended')), 10_000);
    // The reminder falls due while no gateway runs.
    await new Promise((resolve) => setTimeout(resolve, 2_100));

    const second = await startProcess(env);
    const arrived = (kind: string, text: string) => () => find(receiver.received, kind, text) !== undefined;
    await until(arrived('cron', 'reminder-while-down'), 20_000);
    await until(arrived('notification', 'ended-while-down'), 20_000);
    // Adopted, not yet ended: no report of it until the test lets it end.
    expect(find(receiver.received, 'notification', 'still-running-done')).toBeUndefined();
    writeFileSync(join(markers, 'go'), '');
    await until(arrived('notification', 'still-running-done'), 20_000);
    const all = [...receiver.unique().values()];
    expect(find(all, 'cron', 'reminder-while-down')?.body).toMatchObject({ chat_id: 'team', thread_id: 'standup' });
    expect(find(all, 'notification', 'ended-while-down')?.body).toMatchObject({ chat_id: 'ops', thread_id: 'builds' });
    const stillRunning = find(all, 'notification', 'still-running-done');
    expect(stillRunning?.body).toMatchObject({ chat_id: 'ops', thread_id: 'deploys' });
    // Three acknowledgements and three reports, each key once (a reply sent just before the
    // kill but not yet recorded may arrive twice, under its one key: at least once).
    expect(all.map((d) => `${d.body.kind}: ${d.body.text.slice(0, 60)}`)).toHaveLength(6);
    for (const delivery of receiver.received) expect(receiver.unique().get(delivery.body.idempotency_key)!.body.text).toBe(delivery.body.text);

    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
    // Each report is a trace of its own whose root links to the message that started the work.
    const spans = readOtlpSpans(join(dataDir, 'traces.jsonl')) as (OtlpSpan & { links?: { traceId: string }[] })[];
    const linkedTo = (deliveryTraceId: string) =>
      spans.find((span) => span.traceId === deliveryTraceId && !span.parentSpanId)?.links?.map((link) => link.traceId);
    expect(linkedTo(stillRunning!.body.trace_id)).toContain(running.traceId);
    expect(linkedTo(find(all, 'notification', 'ended-while-down')!.body.trace_id)).toContain(ended.traceId);
    expect(linkedTo(find(all, 'cron', 'reminder-while-down')!.body.trace_id)).toContain(reminder.traceId);
  }, 60_000);
});

describe('a foreground command across a kill -9', () => {
  it('runs once when the gateway dies between its end and the end of its turn, whose replay gets the recorded result', async () => {
    const receiver = await DeliveryReceiver.start();
    cleanups.push(() => receiver.close());
    const dataDir = tempDir();
    let life = 1;
    let toolResultSeen: () => void = () => undefined;
    const seen = new Promise<void>((resolve) => (toolResultSeen = resolve));
    let released: () => void = () => undefined;
    const killed = new Promise<void>((resolve) => (released = resolve));
    const model = await FakeOpenAI.start(async ({ body }) => {
      const last = body.messages.at(-1)!;
      if (last.role !== 'tool') return FakeOpenAI.toolCalls([{ name: 'terminal', arguments: { command: 'echo ran >> ran.log; wc -l < ran.log' } }]);
      if (life === 1) {
        // The command has run and its result is back: the gateway dies before the turn ends.
        toolResultSeen();
        await killed;
      }
      return FakeOpenAI.text(`the command said: ${String(last.content)}`);
    });
    cleanups.push(() => model.close());
    const env = {
      THREADLINE_DATA_DIR: dataDir,
      THREADLINE_WEBHOOK_DELIVERY_URL: receiver.url,
      THREADLINE_TERMINAL: '1',
      THREADLINE_ADMINS: '*',
      THREADLINE_WEBHOOK_TOKEN: TEST_SECRETS.webhookToken,
      THREADLINE_LLM_BASE_URL: model.baseUrl,
    };
    const first = await startProcess(env);
    expect((await post(first.url, { chat_id: 'ops', text: 'count the runs' })).status).toBe(202);
    await seen;
    first.child.kill('SIGKILL');
    await first.exited;
    life = 2;
    released();

    await startProcess(env);
    const [reply] = await receiver.waitFor(1, 30_000);
    expect(reply!.body.text).toMatch(/^the command said: exit 0 \(.*\)\n\s*1\n$/);
    expect(readFileSync(join(dataDir, 'ran.log'), 'utf8')).toBe('ran\n');
  }, 60_000);
});
