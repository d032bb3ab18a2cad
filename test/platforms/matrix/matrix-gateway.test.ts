import { describe, expect, it } from 'vitest';
import type { Agent } from '../../../src/agent/agent.js';
import type { TestGateway } from '../../../src/testing/index.js';
import { until, useTestGateways } from '../../helpers/gateway.js';

const startTestGateway = useTestGateways();

/** Where a message was written, and its event id. */
interface Written {
  readonly roomId: string;
  readonly threadRoot: string | undefined;
  readonly text: string;
  readonly eventId: string;
}

function write(g: TestGateway, roomId: string, text: string, threadRoot?: string): Written {
  return { roomId, threadRoot, text, eventId: g.matrix!.postMessage(roomId, text, { threadRoot }) };
}

/**
 * Waits until `last` is answered, then until the gateway is idle: whatever else was read
 * before it (a batch read again) has had its turn and its delivery by then.
 */
async function settled(g: TestGateway, last: Written): Promise<void> {
  await until(() => g.matrix!.sent.some((sent) => sent.body === last.text));
  await until(async () => g.running.gateway.queued === 0 && (await g.running.gateway.health()).outbox.open === 0);
}

/** Each message answered exactly once, in its own room and thread, replying to it. */
function expectAnsweredOnceInPlace(g: TestGateway, written: readonly Written[]): void {
  const answers = new Map<string, number>();
  for (const sent of g.matrix!.sent) answers.set(sent.body, (answers.get(sent.body) ?? 0) + 1);
  const doubled = [...answers].filter(([, count]) => count > 1).map(([text]) => text);
  const lost = written.filter((message) => !answers.has(message.text)).map((message) => message.text);
  expect({ doubled, lost }).toEqual({ doubled: [], lost: [] });
  for (const message of written) {
    const sent = g.matrix!.sent.find((candidate) => candidate.body === message.text)!;
    expect({ room: sent.roomId, thread: sent.threadRoot, replyTo: sent.replyTo }).toEqual({ room: message.roomId, thread: message.threadRoot, replyTo: message.eventId });
    if (message.threadRoot !== undefined) expect(sent.isFallingBack).toBe(true);
  }
}

describe('matrix through the gateway', () => {
  it('answers concurrent messages in many threads of many rooms, each in its own thread, replying to it', async () => {
    const g = await startTestGateway({ matrix: true });
    const written: Written[] = [];
    for (let room = 0; room < 6; room++) {
      for (let thread = 0; thread < 5; thread++) {
        for (let n = 0; n < 5; n++) {
          // Thread 0 is the room's main timeline.
          written.push(write(g, `!r${room}:fake.local`, `r${room} t${thread} m${n}`, thread === 0 ? undefined : `$root-${room}-${thread}`));
        }
      }
    }
    await settled(g, written.at(-1)!);
    await until(() => g.matrix!.sent.length >= written.length);
    expectAnsweredOnceInPlace(g, written);
    expect(g.matrix!.sent.every((sent) => sent.msgtype === 'm.notice')).toBe(true);
    expect(await g.misroutes()).toEqual([]);
  });

  it('restarted mid-batch (intake full, half of it taken), reads the batch again from the stored token: nothing lost, nothing answered twice', async () => {
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const agent: Agent = {
      handle: async (turn) => {
        await gate;
        await turn.reply(turn.text);
      },
    };
    const g = await startTestGateway({ matrix: true, agent, env: { THREADLINE_QUEUE_CAPACITY: '3', THREADLINE_CONCURRENCY: '1', THREADLINE_SHUTDOWN_TIMEOUT_MS: '1000' } });
    const written: Written[] = [];
    for (let n = 0; n < 4; n++) written.push(write(g, '!one:fake.local', `one ${n}`, '$thread-one'), write(g, '!two:fake.local', `two ${n}`));
    // Three are taken; the rest of the batch waits for room in the intake queue.
    await until(() => g.running.gateway.queued === 3);
    const restarting = g.restart();
    for (let n = 0; n < 2; n++) written.push(write(g, '!one:fake.local', `during ${n}`, '$thread-one'), write(g, '!three:fake.local', `three ${n}`));
    await restarting;
    open();
    const last = write(g, '!three:fake.local', 'last');
    await settled(g, last);
    expectAnsweredOnceInPlace(g, [...written, last]);
  });

  it('waits out M_LIMIT_EXCEEDED as retry_after_ms says, and sends once', async () => {
    const g = await startTestGateway({ matrix: true });
    g.matrix!.failNext(1, { retryAfterMs: 1_500 });
    const started = Date.now();
    const message = write(g, '!limited:fake.local', 'after the limit', '$t');
    await until(() => g.matrix!.sent.length === 1, 15_000);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_450);
    expectAnsweredOnceInPlace(g, [message]);
    // The homeserver has it before the outbox has counted the send.
    await until(() => g.running.gateway.outbox.stats().delivered === 1);
    expect(g.running.gateway.outbox.stats()).toMatchObject({ delivered: 1, retried: 1, failed: 0 });
  });

  it('prefers the Retry-After header to retry_after_ms, as Matrix 1.10 says', async () => {
    const g = await startTestGateway({ matrix: true });
    g.matrix!.failNext(1, { retryAfterMs: 10, retryAfterSeconds: 2 });
    const started = Date.now();
    write(g, '!limited:fake.local', 'after the header', '$t');
    await until(() => g.matrix!.sent.length === 1, 15_000);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_950);
  });

  it('sends a reply whose answer was lost once: the delivery id is the transaction id', async () => {
    const g = await startTestGateway({ matrix: true });
    g.matrix!.failNext(1, { status: 502, afterSending: true });
    const message = write(g, '!lossy:fake.local', 'sent once', '$t');
    await until(() => g.running.gateway.outbox.stats().delivered === 1);
    expect(g.running.gateway.outbox.stats().retried).toBe(1);
    expect(g.matrix!.calls.filter((call) => call.endpoint === 'send')).toHaveLength(2);
    expectAnsweredOnceInPlace(g, [message]);
  });

  it('takes a Matrix sender as an admin when THREADLINE_ADMINS names it as Matrix spells it, and nobody else', async () => {
    const g = await startTestGateway({ matrix: true, env: { THREADLINE_ADMINS: 'matrix:@ann:fake.local' } });
    g.matrix!.postMessage('!ops:fake.local', '/sethome', { sender: '@bob:fake.local', threadRoot: '$t' });
    await until(() => g.matrix!.sent.length === 1);
    g.matrix!.postMessage('!ops:fake.local', '/sethome', { sender: '@ann:fake.local', threadRoot: '$t' });
    await until(() => g.matrix!.sent.length === 2);
    expect(g.matrix!.sent.map((sent) => sent.body)).toEqual([expect.stringContaining('is for admins'), 'This chat is now the home channel for matrix.']);
    expect(await g.running.store.homes.get('matrix')).toEqual({ platform: 'matrix', chatId: '!ops:fake.local', threadId: '$t' });
  });

  it('does not answer an end-to-end encrypted event: nothing goes to its room', async () => {
    const g = await startTestGateway({ matrix: true });
    g.matrix!.postEncrypted('!secret:fake.local');
    const plain = write(g, '!plain:fake.local', 'readable', '$t');
    await settled(g, plain);
    expect(g.matrix!.calls.filter((call) => call.roomId === '!secret:fake.local')).toEqual([]);
    expectAnsweredOnceInPlace(g, [plain]);
  });
});
