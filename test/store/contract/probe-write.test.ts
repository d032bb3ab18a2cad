// Store.probeWrite, run against every store implementation.
import { describe, expect, it } from 'vitest';
import { storeImplementations, useStores } from './store-implementations.js';

for (const implementation of storeImplementations()) describe(`${implementation.name} probeWrite`, () => {
  const open = useStores(implementation);

  it('makes a write that changes nothing a table shows', async () => {
    const subject = await open();
    const { store } = subject;
    await store.homes.set({ platform: 'webhook', chatId: 'home' });
    await expect(store.probeWrite()).resolves.toBeUndefined();
    expect(await store.messages.pending()).toEqual([]);
    expect(await store.homes.get('webhook')).toEqual({ platform: 'webhook', chatId: 'home' });
    expect(store.location).not.toBe('');
  });
});
