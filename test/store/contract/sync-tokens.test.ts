// The SyncTokens contract, run against every store implementation.
import { describe, expect, it } from 'vitest';
import { storeImplementations, useStores } from './store-implementations.js';

for (const implementation of storeImplementations()) describe(`${implementation.name} sync tokens`, () => {
  const open = useStores(implementation);

  it('stores a stream\'s first token only while none is stored, then advances only from the one stored', async () => {
    const { store } = await open();
    expect(await store.syncTokens.get('matrix:@bot:x')).toBeUndefined();
    expect(await store.syncTokens.advance('matrix:@bot:x', undefined, 's1')).toBe(true);
    // A second first token, or one advanced from a token no longer stored, changes nothing.
    expect(await store.syncTokens.advance('matrix:@bot:x', undefined, 's-other')).toBe(false);
    expect(await store.syncTokens.advance('matrix:@bot:x', 's0', 's9')).toBe(false);
    expect(await store.syncTokens.get('matrix:@bot:x')).toBe('s1');
    expect(await store.syncTokens.advance('matrix:@bot:x', 's1', 's2')).toBe(true);
    expect(await store.syncTokens.get('matrix:@bot:x')).toBe('s2');
    expect(await store.syncTokens.get('matrix:@other:x')).toBeUndefined();
  });

  it('lets one of two writers advancing from the same token win, and the other see it lost', async () => {
    const subject = await open();
    const { store } = subject;
    const second = subject.peer();
    await store.syncTokens.advance('stream', undefined, 't0');
    const outcomes = await Promise.all([store.syncTokens.advance('stream', 't0', 'from-first'), second.syncTokens.advance('stream', 't0', 'from-second')]);
    expect(outcomes.filter(Boolean)).toHaveLength(1);
    expect(await second.syncTokens.get('stream')).toBe(outcomes[0] ? 'from-first' : 'from-second');
  });

  it('keeps tokens through a close and a reopen', async () => {
    const subject = await open();
    await subject.store.syncTokens.advance('stream', undefined, 'kept');
    const again = await subject.reopen();
    expect(await again.syncTokens.get('stream')).toBe('kept');
  });
});
