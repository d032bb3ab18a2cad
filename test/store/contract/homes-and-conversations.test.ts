// The HomeChannels and Conversations contract, run against every store implementation.
import { describe, expect, it } from 'vitest';
import { chat } from '../store.fixture.js';
import { storeImplementations, useStores } from './store-implementations.js';

for (const implementation of storeImplementations()) describe(`${implementation.name} homes and conversations`, () => {
  const open = useStores(implementation);

  it('keeps home channels per platform, seen by every writer, the last set winning', async () => {
    const subject = await open();
    const { store } = subject;
    await store.homes.set({ platform: 'webhook', chatId: 'home:1', threadId: 't/1' });
    expect(await subject.peer().homes.get('webhook')).toEqual({ platform: 'webhook', chatId: 'home:1', threadId: 't/1' });
    expect(await store.homes.get('slack')).toBeUndefined();
    await store.homes.set({ platform: 'webhook', chatId: 'home:2' });
    expect(await store.homes.get('webhook')).toEqual({ platform: 'webhook', chatId: 'home:2' });
    await store.homes.set({ platform: 'slack', chatId: 'C1' });
    expect(await store.homes.get('slack')).toEqual({ platform: 'slack', chatId: 'C1' });
    expect(await store.homes.get('webhook')).toEqual({ platform: 'webhook', chatId: 'home:2' });
  });

  it('bumps a conversation\'s epoch once per /new, whichever writer asks, and reads it fresh', async () => {
    const subject = await open();
    const { store } = subject;
    const second = subject.peer();
    expect(await store.conversations.epoch('k')).toBe(0);
    expect(await store.conversations.next('k')).toBe(1);
    expect(await store.conversations.epoch('k')).toBe(1);
    expect(await second.conversations.epoch('k')).toBe(1);
    const bumped = await Promise.all([store.conversations.next('k'), second.conversations.next('k'), store.conversations.next('k')]);
    expect(bumped.sort()).toEqual([2, 3, 4]);
    expect(await store.conversations.epoch('k')).toBe(4);
    expect(await store.conversations.epoch('other')).toBe(0);
  });

  it('keeps home channels and epochs through a close and a reopen', async () => {
    const subject = await open();
    await subject.store.homes.set(chat('home', 't'));
    await subject.store.conversations.next('k');
    const again = await subject.reopen();
    expect(await again.homes.get('webhook')).toEqual(chat('home', 't'));
    expect(await again.conversations.epoch('k')).toBe(1);
  });
});
