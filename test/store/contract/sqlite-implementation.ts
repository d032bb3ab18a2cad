// The embedded store, on a file of its own per test so a test can reopen it and write it raw.
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { SqliteStore } from '../../../src/store/sqlite-store.js';
import { useTempDir } from '../../helpers/temp-dir.js';
import { chat, routingOf } from '../store.fixture.js';
import type { StoreImplementation, StoreUnderTest } from './store-under-test.js';

/** Far enough ahead that no lease ends during a test. */
const LEASE = Number.MAX_SAFE_INTEGER;

/** Call at a test file's top level: its temp dir is removed after the file. */
export function sqliteImplementation(): StoreImplementation {
  const tempDir = useTempDir('store-contract');
  let files = 0;
  return {
    name: 'SqliteStore',
    traits: { sharedIntake: false, keepsInstance: false },
    async open(): Promise<StoreUnderTest> {
      const path = join(tempDir(), `store-${++files}.db`);
      let current = await SqliteStore.open(path);
      let deliveries = 0;
      const raw = (sql: string, ...parameters: unknown[]) => {
        const db = new Database(path);
        try {
          db.prepare(sql).run(...parameters);
        } finally {
          db.close();
        }
      };
      return {
        store: current,
        peer: () => current,
        reopen: async () => {
          await current.close();
          current = await SqliteStore.open(path);
          return current;
        },
        openDelivery: async (destination) => {
          const id = `open-${++deliveries}`;
          await current.outbox.add({ id, kind: 'reply', destination, text: 'open', origin: routingOf(destination.chatId), createdAt: 1 }, LEASE);
          return { finish: async () => void (await current.outbox.markDone(id, LEASE)) };
        },
        notice: async (processId, status) => {
          const id = `proc:${processId}:done`;
          // A chat of its own, so the notice is its head and claimed at once.
          const destination = chat(`notice-of-${processId}`);
          await current.outbox.add({ id, kind: 'notification', destination, text: 'ended', origin: routingOf(destination.chatId), createdAt: 1 }, LEASE);
          if (status === 'done') await current.outbox.markDone(id, LEASE);
          if (status === 'failed') await current.outbox.markFailed(id, 'gave up', LEASE);
        },
        damage: async (table, id, origin) => raw(`UPDATE ${table} SET origin = ?, destination = 'no-colon' WHERE id = ?`, origin, id),
        damageMessage: async (id) => raw(`UPDATE messages SET routing = '{not json' WHERE id = ?`, id),
        close: () => current.close(),
      };
    },
  };
}
