import { expect } from 'vitest';
import { startTestGateway, type ReceivedDelivery, type TestGateway, type TestGatewayOptions } from '../../src/testing/index.js';

const MINUTE = 60_000;

/** Runs `tasks` with at most `limit` at once. */
async function pooled<T>(tasks: (() => Promise<T>)[], limit: number): Promise<T[]> {
  const results: T[] = new Array(tasks.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < tasks.length) {
        const i = next++;
        results[i] = await tasks[i]!();
      }
    }),
  );
  return results;
}

export interface ScenarioResult {
  /** Each notification or reminder that is missing, repeated or at another chat or thread than its session's. */
  readonly misplaced: string[];
  readonly delivered: number;
}

/**
 * `sessions` sessions, ten threads to a chat, each starting a background command of random
 * length and a reminder of random delay, all at once; the clock is moved two hours on. Says
 * where each notification and reminder landed. The gateway is stopped before it returns.
 */
export async function runManySessions(sessions: number, options: Pick<TestGatewayOptions, 'agent'> = {}): Promise<ScenarioResult> {
  const g: TestGateway = await startTestGateway({
    ...options,
    clock: 'manual',
    webhookToken: true,
    env: {
      // Lenient: the scenario proves the routing itself; strict routing would refuse some of a
      // naive routing's misroutes instead of letting them show.
      THREADLINE_STRICT_ROUTING: '0',
      THREADLINE_TERMINAL: '1',
      THREADLINE_ADMINS: '*',
      THREADLINE_TERMINAL_MAX_TOTAL: String(sessions),
      THREADLINE_QUEUE_CAPACITY: String(4 * sessions),
    },
  });
  try {
    const plan = Array.from({ length: sessions }, (_, i) => ({
      // Ten threads a chat: a thread mixed up with a sibling's shows.
      chat: `chat-${i % Math.max(1, sessions / 10)}`,
      thread: `thread-${i}`,
      sleep: `0.${Math.floor(Math.random() * 10)}`,
      minutes: 1 + Math.floor(Math.random() * 120),
    }));
    const statuses = await pooled(
      plan.flatMap((s, i) => [
        () => g.send({ chat_id: s.chat, thread_id: s.thread, chat_type: 'group', text: `/run sleep ${s.sleep}; echo done-${i}` }),
        () => g.send({ chat_id: s.chat, thread_id: s.thread, chat_type: 'group', text: `/remind ${s.minutes}m remind-${i}` }),
      ]),
      64,
    );
    expect(statuses.filter((answer) => answer.status !== 202)).toEqual([]);
    // Two acknowledgements a session, and each command's end.
    await g.receiver.waitFor(3 * sessions, 120_000);

    // An hour on: the reminders of the first hour, and none later, are in the outbox.
    await g.advanceTime(60 * MINUTE);
    const firstHour = plan.filter((s) => s.minutes <= 60).length;
    const cronRecorded = (await g.deliveries({ limit: 10 * sessions })).filter((delivery) => delivery.kind === 'cron');
    expect(cronRecorded.length).toBe(firstHour);
    await g.advanceTime(61 * MINUTE);
    const delivered = await g.receiver.waitFor(4 * sessions, 120_000);

    const byText = (kind: string, text: string): ReceivedDelivery[] =>
      delivered.filter((delivery) => delivery.body.kind === kind && delivery.body.text.split(/\s/).includes(text));
    const misplaced: string[] = [];
    plan.forEach((s, i) => {
      for (const [kind, text] of [
        ['notification', `done-${i}`],
        ['cron', `remind-${i}`],
      ] as const) {
        const found = byText(kind, text);
        if (found.length !== 1) misplaced.push(`${text}: ${found.length} deliveries`);
        for (const delivery of found) {
          if (delivery.body.chat_id !== s.chat || delivery.body.thread_id !== s.thread) {
            misplaced.push(`${text} went to ${delivery.body.chat_id}/${String(delivery.body.thread_id)}, not ${s.chat}/${s.thread}`);
          }
        }
      }
    });
    // No key arrived with two different bodies.
    for (const delivery of g.receiver.received) {
      expect(g.receiver.unique().get(delivery.body.idempotency_key)!.body.text).toBe(delivery.body.text);
    }
    return { misplaced, delivered: delivered.length };
  } finally {
    await g.stop();
  }
}
