// Every implementation of the Store interface: a store written later joins the contract suite here.
import { afterEach } from 'vitest';
import { redisImplementation } from './redis-implementation.js';
import { sqliteImplementation } from './sqlite-implementation.js';
import type { StoreImplementation, StoreUnderTest } from './store-under-test.js';

/** Call at a contract file's top level: each implementation sets up what the file shares (a temp dir, a Redis). */
export function storeImplementations(): StoreImplementation[] {
  return [sqliteImplementation(), redisImplementation()];
}

/** Opens `implementation` afresh for each call; every store opened is closed after its test. */
export function useStores(implementation: StoreImplementation): () => Promise<StoreUnderTest> {
  const opened: StoreUnderTest[] = [];
  afterEach(async () => {
    for (const subject of opened.splice(0)) await subject.close();
  });
  return async () => {
    const subject = await implementation.open();
    opened.push(subject);
    return subject;
  };
}
