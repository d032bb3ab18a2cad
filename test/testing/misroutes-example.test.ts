// A user's test that no reply of their agent leaves its conversation, and that one which does is caught.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Agent } from '../../src/agent/agent.js';
import { captureRouting, withSession } from '../../src/session/index.js';
import { startTestGateway, type TestGateway } from '../../src/testing/index.js';

/**
 * Replies in its turn; for "stray" a leaked callback delivers this turn's work from inside
 * another chat's session. (turn.reply() cannot stray: it always answers its own chat.)
 */
const agent: Agent = {
  async handle(turn) {
    if (turn.text !== 'stray') return turn.reply(`you said ${turn.text}`);
    const origin = captureRouting();
    return withSession({ platform: 'webhook', chatId: 'someone-else', chatType: 'dm' }, () =>
      gateway.running.gateway.router.deliver({ id: `stray-${turn.messageId}`, kind: 'notification', text: 'not for you', origin }),
    );
  },
};

let gateway: TestGateway;
beforeAll(async () => {
  gateway = await startTestGateway({ agent });
});
afterAll(() => gateway.stop());

/** Sends and waits until the message's trace has ended, its deliveries included. */
async function sendAndSettle(chatId: string, threadId: string, text: string): Promise<void> {
  const answer = await gateway.send({ chat_id: chatId, thread_id: threadId, text });
  await gateway.waitForSpans(answer.body['trace_id'] as string, ['gateway.message', 'gateway.deliver']);
}

describe('TestGateway.misroutes()', () => {
  it('is empty while every reply stays in its chat and thread', async () => {
    await Promise.all([sendAndSettle('ops', '1', 'hello'), sendAndSettle('dev', '2', 'hi')]);
    expect(await gateway.misroutes()).toEqual([]);
  });

  it('names the stray reply: where its work came from, where it went, and the turn behind it', async () => {
    await sendAndSettle('ops', '7', 'stray');
    const misroutes = await gateway.misroutes();
    expect(misroutes).toHaveLength(1);
    // Strict routing (the default) refused it: nothing reached someone-else.
    expect(misroutes[0]).toMatchObject({
      deliveryKind: 'notification',
      origin: { platform: 'webhook', chatId: 'ops', threadId: '7' },
      destination: { platform: 'webhook', chatId: 'someone-else' },
      outcome: 'refused',
      detectedBy: 'guard',
      divergedAt: { name: 'gateway.deliver' },
      work: { kind: 'turn', name: 'gateway.message' },
    });
  });
});
