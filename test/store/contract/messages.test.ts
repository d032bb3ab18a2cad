// The MessageLog contract, run against every store implementation.
import { describe, expect, it } from 'vitest';
import type { AcceptChecks, StoredMessage } from '../../../src/store/store.js';
import { chat, routingOf } from '../store.fixture.js';
import { storeImplementations, useStores } from './store-implementations.js';

function message(id: string, receivedAt = 1, chatId = 'c:1'): StoredMessage {
  return { id, routing: routingOf(chatId), text: `text of ${id}`, receivedAt };
}
const ROOMY: AcceptChecks = { destination: chat('c:1'), maxOpenPerDestination: 1_000, maxOpenTotal: 1_000 };
const ids = (messages: readonly StoredMessage[]) => messages.map((stored) => stored.id);

for (const implementation of storeImplementations()) describe(`${implementation.name} messages`, () => {
  const open = useStores(implementation);
  const { sharedIntake } = implementation.traits;

  it('keeps accepted messages until completed, oldest first, ties by id', async () => {
    const { store } = await open();
    for (const stored of [message('m-3', 20), message('m-2', 10), message('m-1', 10)]) {
      expect(await store.messages.accept(stored, ROOMY)).toEqual({ status: 'accepted' });
    }
    expect(await store.messages.pending()).toEqual([message('m-1', 10), message('m-2', 10), message('m-3', 20)]);
    await store.messages.complete('m-2');
    await store.messages.complete('never-there');
    expect(ids(await store.messages.pending())).toEqual(['m-1', 'm-3']);
  });

  it('keeps what was accepted through a close and a reopen', async () => {
    const subject = await open();
    await subject.store.messages.accept(message('m-1'), ROOMY);
    await subject.store.messages.accept(message('m-2'), ROOMY);
    await subject.store.messages.complete('m-1');
    const again = await subject.reopen();
    expect(await again.messages.pending()).toEqual([message('m-2')]);
  });

  it('answers a seen key with its first answer without appending, until the key expires', async () => {
    const { store } = await open();
    // Received now: a key's expiry is measured against the present.
    const now = (id: string) => message(id, Date.now());
    const checks = { ...ROOMY, idempotency: { key: 'update:1', answer: 'first', expiresAt: Date.now() + 60_000 } };
    expect(await store.messages.accept(now('m-1'), checks)).toEqual({ status: 'accepted' });
    const second = await store.messages.accept(now('m-2'), { ...checks, idempotency: { ...checks.idempotency, answer: 'second' } });
    expect(second).toEqual({ status: 'duplicate', answer: 'first' });
    expect(ids(await store.messages.pending())).toEqual(['m-1']);
    // A key already expired is not remembered at all.
    const expired = { key: 'old', answer: 'x', expiresAt: Date.now() - 1 };
    expect(await store.messages.accept(now('m-3'), { ...ROOMY, idempotency: expired })).toEqual({ status: 'accepted' });
    expect(await store.messages.accept(now('m-4'), { ...ROOMY, idempotency: { ...expired, answer: 'y' } })).toEqual({ status: 'accepted' });
    expect(ids(await store.messages.pending())).toEqual(['m-1', 'm-3', 'm-4']);
  });

  it('answers a duplicate of a message still waiting with the message when instances share intake; an accept sent again is accepted there', async () => {
    const { store } = await open();
    const expiresAt = Date.now() + 60_000;
    const answerOf = (id: string) => JSON.stringify({ messageId: id, sessionId: 's', traceId: 't' });
    const checks = (id: string) => ({ ...ROOMY, idempotency: { key: 'update:7', answer: answerOf(id), expiresAt } });
    expect(await store.messages.accept(message('m-1'), checks('m-1'))).toEqual({ status: 'accepted' });
    // The same accept again (its reply lost, the command sent anew): with shared intake it finds its own answer.
    expect(await store.messages.accept(message('m-1'), checks('m-1'))).toEqual(
      sharedIntake ? { status: 'accepted' } : { status: 'duplicate', answer: answerOf('m-1') },
    );
    expect(await store.messages.accept(message('m-2'), checks('m-2'))).toEqual({
      status: 'duplicate',
      answer: answerOf('m-1'),
      ...(sharedIntake ? { waiting: message('m-1') } : {}),
    });
    await store.messages.complete('m-1');
    expect(await store.messages.accept(message('m-3'), checks('m-3'))).toEqual({ status: 'duplicate', answer: answerOf('m-1') });
    expect(ids(await store.messages.pending())).toEqual([]);
  });

  it('never holds two messages of one id: an accept of one still pending appends nothing', async () => {
    const { store } = await open();
    expect(await store.messages.accept(message('m-1'), ROOMY)).toEqual({ status: 'accepted' });
    const again = store.messages.accept({ ...message('m-1'), text: 'another text' }, ROOMY);
    // Where instances share intake, a command sent again must find it done; the embedded store refuses the write.
    if (sharedIntake) expect(await again).toEqual({ status: 'accepted' });
    else await expect(again).rejects.toMatchObject({ code: 'TL_STORE_FAILED' });
    expect(await store.messages.pending()).toEqual([message('m-1')]);
    // Counted once toward its chat's cap.
    const capped = { ...ROOMY, maxOpenPerDestination: 2 };
    expect(await store.messages.accept(message('m-2'), capped)).toEqual({ status: 'accepted' });
    expect(await store.messages.accept(message('m-3'), capped)).toEqual({ status: 'full', scope: 'destination', open: 2 });
  });

  it('counts messages waiting for their turn toward their chat\'s cap, and the message of a full chat is not appended', async () => {
    const { store } = await open();
    const checks = { destination: chat('c'), maxOpenPerDestination: 2, maxOpenTotal: 100 };
    expect(await store.messages.accept(message('m-1'), checks)).toEqual({ status: 'accepted' });
    expect(await store.messages.accept(message('m-2'), checks)).toEqual({ status: 'accepted' });
    expect(await store.messages.accept(message('m-3'), checks)).toEqual({ status: 'full', scope: 'destination', open: 2 });
    expect(await store.messages.accept(message('m-4'), { ...checks, destination: chat('other') })).toEqual({ status: 'accepted' });
    await store.messages.complete('m-1');
    expect(await store.messages.accept(message('m-5'), checks)).toEqual({ status: 'accepted' });
    expect(ids(await store.messages.pending())).toEqual(['m-2', 'm-4', 'm-5']);
  });

  it('counts the chat\'s open deliveries with its waiting messages, as the outbox counts them', async () => {
    const subject = await open();
    const { store } = subject;
    await subject.openDelivery(chat('c', 't'));
    await subject.openDelivery(chat('c', 't'));
    const checks = { destination: chat('c', 't'), maxOpenPerDestination: 3, maxOpenTotal: 100 };
    expect(await store.messages.accept(message('m-1'), checks)).toEqual({ status: 'accepted' });
    expect(await store.messages.accept(message('m-2'), checks)).toEqual({ status: 'full', scope: 'destination', open: 3 });
    // The chat without the thread is another destination.
    expect(await store.messages.accept(message('m-3'), { ...checks, destination: chat('c') })).toEqual({ status: 'accepted' });
  });

  it('caps all open deliveries, not the messages waiting for their turn', async () => {
    const subject = await open();
    const { store } = subject;
    const checks = (chatId: string) => ({ destination: chat(chatId), maxOpenPerDestination: 10, maxOpenTotal: 1 });
    expect(await store.messages.accept(message('m-1'), checks('a'))).toEqual({ status: 'accepted' });
    expect(await store.messages.accept(message('m-2'), checks('a'))).toEqual({ status: 'accepted' });
    const delivery = await subject.openDelivery(chat('b'));
    expect(await store.messages.accept(message('m-3'), checks('c'))).toEqual({ status: 'full', scope: 'total', open: 1 });
    await delivery.finish();
    expect(await store.messages.accept(message('m-4'), checks('c'))).toEqual({ status: 'accepted' });
    expect(ids(await store.messages.pending())).toEqual(['m-1', 'm-2', 'm-4']);
  });

  it('refuses past maxPendingMessages across every chat when instances share intake, and not when it is unset', async () => {
    const { store } = await open();
    const checks = (chatId: string) => ({ destination: chat(chatId), maxOpenPerDestination: 10, maxOpenTotal: 10, maxPendingMessages: 2 });
    expect(await store.messages.accept(message('m-1'), checks('a'))).toEqual({ status: 'accepted' });
    expect(await store.messages.accept(message('m-2'), checks('b'))).toEqual({ status: 'accepted' });
    // The embedded gateway bounds its queue in process: its store does not count.
    expect(await store.messages.accept(message('m-3'), checks('c'))).toEqual(sharedIntake ? { status: 'full', scope: 'messages', open: 2 } : { status: 'accepted' });
    const { maxPendingMessages: _unset, ...unbounded } = checks('c');
    expect(await store.messages.accept(message('m-4'), unbounded)).toEqual({ status: 'accepted' });
    await store.messages.complete('m-1');
    await store.messages.complete('m-4');
    expect(await store.messages.accept(message('m-5'), checks('c'))).toEqual({ status: 'accepted' });
    expect(ids(await store.messages.pending())).toEqual(sharedIntake ? ['m-2', 'm-5'] : ['m-2', 'm-3', 'm-5']);
  });

  it('never accepts past a cap when writers accept at once', async () => {
    const subject = await open();
    const { store } = subject;
    const second = subject.peer();
    const checks = { destination: chat('busy'), maxOpenPerDestination: 5, maxOpenTotal: 100 };
    const outcomes = await Promise.all(
      Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? store : second).messages.accept(message(`m-${String(i).padStart(2, '0')}`), checks)),
    );
    expect(outcomes.filter((outcome) => outcome.status === 'accepted')).toHaveLength(5);
    expect(await second.messages.pending()).toHaveLength(5);
    const pendingCap = { ...ROOMY, maxPendingMessages: 8 };
    const more = await Promise.all(
      Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? store : second).messages.accept(message(`n-${i}`, 2, `chat-${i}`), { ...pendingCap, destination: chat(`chat-${i}`) })),
    );
    expect(more.filter((outcome) => outcome.status === 'accepted')).toHaveLength(sharedIntake ? 3 : 40);
    expect(await store.messages.pending()).toHaveLength(sharedIntake ? 8 : 45);
  });

  it('answers a seen key once when writers race with it', async () => {
    const subject = await open();
    const { store } = subject;
    const second = subject.peer();
    const expiresAt = Date.now() + 60_000;
    // Each answer names its own message, as the gateway's do.
    const outcomes = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        (i % 2 === 0 ? store : second).messages.accept(message(`m-${i}`), { ...ROOMY, idempotency: { key: 'update:7', answer: `answer of m-${i}`, expiresAt } }),
      ),
    );
    expect(outcomes.filter((outcome) => outcome.status === 'accepted')).toHaveLength(1);
    expect(await store.messages.pending()).toHaveLength(1);
  });

  it('leaves out a stored message that does not parse instead of failing the restart, when instances share intake', async () => {
    const subject = await open();
    const { store } = subject;
    await store.messages.accept(message('m-1', 1), ROOMY);
    await store.messages.accept(message('m-2', 2), ROOMY);
    await subject.damageMessage('m-2');
    if (sharedIntake) expect(ids(await store.messages.pending())).toEqual(['m-1']);
    else await expect(store.messages.pending()).rejects.toThrow(SyntaxError);
  });
});
