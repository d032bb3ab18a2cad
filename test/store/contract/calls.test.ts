// The CallResults contract, run against every store implementation.
import { describe, expect, it } from 'vitest';
import type { AcceptChecks } from '../../../src/store/store.js';
import { chat, routingOf } from '../store.fixture.js';
import { storeImplementations, useStores } from './store-implementations.js';

const ROOMY: AcceptChecks = { destination: chat('c:1'), maxOpenPerDestination: 1_000, maxOpenTotal: 1_000 };

for (const implementation of storeImplementations()) describe(`${implementation.name} call results`, () => {
  const open = useStores(implementation);

  it('keeps the first result of a key, seen by every writer and through a reopen, until its message completes', async () => {
    const subject = await open();
    const { store } = subject;
    await store.messages.accept({ id: 'm-1', routing: routingOf('c:1'), text: 'run it', receivedAt: 1 }, ROOMY);
    expect(await store.calls.get('m-1', 'm-1/1')).toBeUndefined();
    await store.calls.record('m-1', 'm-1/1', '{"text":"exit 0"}');
    await store.calls.record('m-1', 'm-1/1', '{"text":"exit 1"}');
    await store.calls.record('m-1', 'm-1/2', '{"text":"second call"}');
    expect(await subject.peer().calls.get('m-1', 'm-1/1')).toBe('{"text":"exit 0"}');
    const again = await subject.reopen();
    expect(await again.calls.get('m-1', 'm-1/2')).toBe('{"text":"second call"}');
    // Another message's key is not this message's.
    expect(await again.calls.get('m-2', 'm-1/1')).toBeUndefined();
    await again.messages.complete('m-1');
    expect(await again.calls.get('m-1', 'm-1/1')).toBeUndefined();
    expect(await again.calls.get('m-1', 'm-1/2')).toBeUndefined();
  });
});
