import { describe, expect, it } from 'vitest';
import { runThreadline } from '../../src/cli/threadline.js';
import type { TestGateway } from '../../src/testing/index.js';
import { until, useTestGateways } from '../helpers/gateway.js';

const start = useTestGateways();

/** Runs the `threadline` CLI in-process against the gateway's data dir; its exit code and output. */
async function cli(g: TestGateway, ...args: string[]): Promise<{ code: number; out: string }> {
  let out = '';
  const code = await runThreadline([...args, '--data-dir', g.dataDir], {
    out: (text) => void (out += text),
    err: (text) => void (out += text),
    env: {},
  });
  return { code, out };
}

async function health(g: TestGateway): Promise<Record<string, unknown>> {
  return (await (await fetch(`${g.url}/v1/health`)).json()) as Record<string, unknown>;
}

describe('a delivery target that is down', () => {
  it('pushes back with 429 at the chat cap, loses nothing, lists the dead letters, and sends them on retry', async () => {
    const g = await start({
      env: {
        THREADLINE_OUTBOX_MAX_PER_CHAT: '100',
        THREADLINE_DELIVERY_MAX_ATTEMPTS: '2',
        THREADLINE_DELIVERY_BACKOFF_MS: '1',
        THREADLINE_DELIVERY_BACKOFF_MAX_MS: '2',
      },
    });
    g.receiver.failEvery(500);
    /** Texts of the accepted messages by message id: time-ordered ids, so in the order they were taken. */
    const accepted: { id: string; text: string }[] = [];
    const refused: { status: number; code: unknown; retryAfter: string | null }[] = [];
    // 5,000 messages to one chat, 50 in flight; each message's text says its place.
    let next = 0;
    await Promise.all(
      Array.from({ length: 50 }, async () => {
        for (let i = next++; i < 5_000; i = next++) {
          const answer = await g.send({ chat_id: 'down', text: `m${i}` });
          if (answer.status === 202) accepted.push({ id: String(answer.body['message_id']), text: `m${i}` });
          else refused.push({ status: answer.status, code: answer.body['code'], retryAfter: answer.headers.get('retry-after') });
        }
      }),
    );
    expect(refused.length).toBeGreaterThan(0);
    expect(new Set(refused.map((r) => `${r.status} ${String(r.code)} ${r.retryAfter}`))).toEqual(new Set(['429 TL_CHAT_BACKLOG_FULL 30']));
    expect(accepted.length + refused.length).toBe(5_000);

    // Every accepted message's reply gives up after its two attempts and is kept.
    await until(async () => (await g.deliveries({ failedOnly: true, limit: 10_000 })).length === accepted.length, 60_000);
    const listed = await cli(g, 'deliveries', 'list', '--failed', '--chat', 'down', '--json', '--limit', '10000');
    expect(listed.code).toBe(0);
    const dead = JSON.parse(listed.out) as { text: string; status: string }[];
    const texts = accepted.sort((a, b) => (a.id < b.id ? -1 : 1)).map((message) => message.text);
    expect(dead.map((record) => record.text).sort()).toEqual([...texts].sort());
    expect(dead.every((record) => record.status === 'failed')).toBe(true);

    g.receiver.failEvery(undefined);
    const retried = await cli(g, 'deliveries', 'retry', '--all-failed');
    expect(retried.code).toBe(0);
    const delivered = await g.receiver.waitFor(accepted.length, 60_000);
    // Sent again in the order they were first recorded: the chat's order.
    expect(delivered.map((d) => d.body.text)).toEqual(texts);
    await until(async () => (await health(g))['outbox_pending'] === 0);
  }, 120_000);

  it('says why in /v1/health while a chat is at its cap, and takes other chats', async () => {
    const g = await start({ env: { THREADLINE_OUTBOX_MAX_PER_CHAT: '3', THREADLINE_DELIVERY_MAX_ATTEMPTS: '100' } });
    // Every attempt asks to wait an hour: nothing drains during the test.
    g.receiver.failEvery(503);
    g.receiver.failNext(1_000, 503, '3600');
    // A message between its reply and its own finished record counts twice for a moment: at
    // the cap, every message is refused and health says so.
    await until(async () => (await g.send({ chat_id: 'slow', text: 'more' })).status === 429 && (await health(g))['status'] === 'degraded');
    const report = await health(g);
    expect(report['status']).toBe('degraded');
    expect(report['outbox_full_chats']).toBe(1);
    expect(String((report['reasons'] as string[])[0])).toContain('THREADLINE_OUTBOX_MAX_PER_CHAT');
    expect((await g.send({ chat_id: 'other', text: 'fine' })).status).toBe(202);
  });

  it('answers 503 TL_OUTBOX_FULL once all chats together are at THREADLINE_OUTBOX_MAX_PENDING', async () => {
    const g = await start({ env: { THREADLINE_OUTBOX_MAX_PENDING: '4', THREADLINE_DELIVERY_MAX_ATTEMPTS: '100' } });
    g.receiver.failNext(1_000, 503, '3600');
    for (let i = 0; i < 4; i++) expect((await g.send({ chat_id: `c${i}`, text: 'x' })).status).toBe(202);
    await until(async () => (await health(g))['outbox_pending'] === 4);
    const answer = await g.send({ chat_id: 'new-chat', text: 'x' });
    expect(answer.status).toBe(503);
    expect(answer.body['code']).toBe('TL_OUTBOX_FULL');
    expect(answer.headers.get('retry-after')).toBe('30');
    expect(String(((await health(g))['reasons'] as string[])[0])).toContain('THREADLINE_OUTBOX_MAX_PENDING');
  });
});
