import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { SCHEMA_VERSION } from '../../src/store/sqlite-schema.js';
import { findLostInStore } from '../../src/forensics/lost-in-store.js';
import { SqliteConnection } from '../../src/store/sqlite-connection.js';
import { READ_OPERATIONS, openDatabase, sqliteOperations } from '../../src/store/sqlite-operations.js';
import { SqliteStore } from '../../src/store/sqlite-store.js';
import { MAX_STATE_IDS } from '../../src/store/store.js';
import { useTempDir } from '../helpers/temp-dir.js';
import { chat, routingOf } from './store.fixture.js';

const tempDir = useTempDir('read-only-store');
const LEASE = 1_000_000;
const RETENTION = { doneMs: 1_000, failedMs: 1_000 };

const opened: { close(): Promise<void> | void }[] = [];
afterEach(async () => {
  for (const store of opened.splice(0).reverse()) await store.close();
});

let stores = 0;
/** A fresh store path in a directory of its own. */
function storePath(): string {
  const dir = join(tempDir(), `store-${++stores}`);
  mkdirSync(dir);
  return join(dir, 'threadline.db');
}

async function gatewayStore(path = storePath()): Promise<SqliteStore> {
  const store = await SqliteStore.open(path, RETENTION);
  opened.push(store);
  return store;
}

async function readOnly(path: string): Promise<SqliteStore> {
  const store = await SqliteStore.openReadOnly(path);
  opened.push(store);
  return store;
}

/** A second connection as the gateway's: never waits for a lock, so a lock held by the reader fails it at once. */
function impatientWriter(path: string): Database.Database {
  const db = new Database(path, { timeout: 0 });
  opened.push({ close: () => void db.close() });
  return db;
}

const addDelivery = (store: SqliteStore, id: string, at: number) =>
  store.outbox.add({ id, kind: 'reply', destination: chat(id), text: 't', origin: routingOf(id), createdAt: at }, LEASE);

const indexesOf = (path: string): string[] => {
  const db = new Database(path, { readonly: true });
  try {
    return db.prepare<[], { name: string }>(`SELECT name FROM sqlite_schema WHERE type = 'index' ORDER BY name`).all().map((row) => row.name);
  } finally {
    db.close();
  }
};

describe('SqliteStore.openReadOnly: the forensics commands\' read of a gateway\'s store', () => {
  it('reads a store a gateway has open, its last commits still in the WAL', async () => {
    const path = storePath();
    const gateway = await gatewayStore(path);
    await addDelivery(gateway, 'd-open', 10);
    expect(existsSync(`${path}-wal`)).toBe(true);
    const store = await readOnly(path);
    expect((await store.outbox.overdue({ before: 100, limit: 10 })).map((delivery) => delivery.id)).toEqual(['d-open']);
    // And it keeps seeing the gateway's later commits.
    await addDelivery(gateway, 'd-later', 20);
    expect((await store.outbox.overdue({ before: 100, limit: 10 })).map((delivery) => delivery.id)).toEqual(['d-later', 'd-open']);
  });

  it('reads while a gateway holds the write lock, and takes none: the gateway\'s write commits without waiting', async () => {
    const path = storePath();
    await addDelivery(await gatewayStore(path), 'd-committed', 10);
    const store = await readOnly(path);
    const writer = impatientWriter(path);
    writer.exec('BEGIN IMMEDIATE');
    writer
      .prepare(`INSERT INTO deliveries (id, kind, destination, text, origin, status, attempts_since, due_at, created_at) VALUES ('d-uncommitted', 'reply', 'webhook:u', 't', '{}', 'pending', 11, 11, 11)`)
      .run();
    // The read runs while the write transaction is open: it sees the last commit, not the write under way.
    const lost = await findLostInStore(store, { now: 1_000, lostAfterMs: 10, limit: 10 });
    expect(lost.map((work) => work.id)).toEqual(['d-committed']);
    writer.exec('COMMIT');
    // Nothing of the read is left holding a lock: the next write is not kept waiting either.
    writer.exec('BEGIN IMMEDIATE');
    writer.exec('COMMIT');
    expect((await store.outbox.overdue({ before: 100, limit: 10 })).map((delivery) => delivery.id)).toEqual(['d-uncommitted', 'd-committed']);
  });

  it('neither creates nor moves the schema: a store made before deliveries_failed_since is read as it is', async () => {
    const path = storePath();
    const gateway = await gatewayStore(path);
    await addDelivery(gateway, 'd-dead', 10);
    await gateway.outbox.markFailed('d-dead', 'gone', LEASE);
    await gateway.close();
    const old = new Database(path);
    old.exec('DROP INDEX deliveries_failed_since');
    old.close();
    const store = await readOnly(path);
    // Without the index the dead letters are sorted, not read in order: slower, same answer.
    expect((await store.outbox.overdue({ before: 100, limit: 10 })).map((delivery) => [delivery.id, delivery.status])).toEqual([['d-dead', 'failed']]);
    await store.close();
    expect(indexesOf(path)).not.toContain('deliveries_failed_since');
  });

  it('refuses a store of another schema version, naming both, and changes nothing of it', async () => {
    for (const version of [SCHEMA_VERSION - 1, SCHEMA_VERSION + 1]) {
      const path = storePath();
      await (await gatewayStore(path)).close();
      const db = new Database(path);
      db.pragma(`user_version = ${version}`);
      db.close();
      await expect(SqliteStore.openReadOnly(path)).rejects.toMatchObject({
        code: 'TL_STORE_FAILED',
        message: expect.stringContaining(`has schema version ${version} and this threadline reads version ${SCHEMA_VERSION}`),
      });
      const after = new Database(path, { readonly: true });
      expect(after.pragma('user_version', { simple: true })).toBe(version);
      after.close();
    }
  });

  it('refuses a path that holds no store, and creates nothing there', async () => {
    const path = storePath();
    await expect(SqliteStore.openReadOnly(path)).rejects.toMatchObject({ code: 'TL_STORE_FAILED', message: expect.stringContaining(`Cannot read the store at ${path}`) });
    expect(existsSync(path)).toBe(false);
  });

  it('refuses every operation that writes, by name, before SQLite is asked', async () => {
    const path = storePath();
    await addDelivery(await gatewayStore(path), 'd1', 10);
    const connection = SqliteConnection.openReadOnly(path, RETENTION);
    opened.push(connection);
    const scratch = openDatabase(':memory:');
    const names = Object.keys(sqliteOperations(scratch, RETENTION)) as (keyof ReturnType<typeof sqliteOperations>)[];
    scratch.close();
    const writes = names.filter((name) => !READ_OPERATIONS.has(name));
    expect(writes).toEqual(expect.arrayContaining(['addDelivery', 'claim', 'markDone', 'markFailed', 'retryFailed', 'releaseLeases', 'setHome', 'nextEpoch']));
    for (const name of writes) {
      await expect((connection.call as (name: string) => Promise<unknown>)(name)).rejects.toMatchObject({
        code: 'TL_STORE_FAILED',
        message: `The store at ${path} is open read-only: ${name} would change it`,
      });
    }
    const store = await readOnly(path);
    await expect(store.outbox.retryFailed(undefined)).rejects.toMatchObject({ code: 'TL_STORE_FAILED' });
    await expect(store.homes.set(chat('h'))).rejects.toMatchObject({ code: 'TL_STORE_FAILED' });
    expect((await store.outbox.list({ limit: 10 })).map((delivery) => [delivery.id, delivery.status])).toEqual([['d1', 'sending']]);
  });

  it('reads a copy in a directory nobody may write, with its WAL or closed cleanly', async () => {
    const source = storePath();
    const gateway = await gatewayStore(source);
    await addDelivery(gateway, 'd-copied', 10);
    const live = copyStore(source, 'live-copy', true);
    await gateway.close();
    const closed = copyStore(source, 'closed-copy', false);
    for (const path of [live, closed]) {
      expect(readCopy(path)).toEqual(['d-copied']);
      // Nothing was written beside it.
      expect(readdirSync(resolve(path, '..')).sort()).toEqual(path === live ? ['threadline.db', 'threadline.db-shm', 'threadline.db-wal'] : ['threadline.db']);
    }
  });

  it('outbox.states: the status of each id the outbox holds, read in chunks of MAX_STATE_IDS', async () => {
    const path = storePath();
    const gateway = await gatewayStore(path);
    const asked = Array.from({ length: 2 * MAX_STATE_IDS + 1 }, (_, i) => `missing-${i}`);
    // One at each chunk's first and last place, one alone in the last chunk.
    for (const i of [0, MAX_STATE_IDS - 1, MAX_STATE_IDS, 2 * MAX_STATE_IDS]) asked[i] = `d${i}`;
    for (const i of [0, MAX_STATE_IDS - 1, MAX_STATE_IDS, 2 * MAX_STATE_IDS]) await addDelivery(gateway, `d${i}`, 10);
    await gateway.outbox.markDone('d0', LEASE);
    await gateway.outbox.markFailed(`d${MAX_STATE_IDS}`, 'gone', LEASE);
    const store = await readOnly(path);
    const states = await store.outbox.states([...asked, 'd0']);
    expect(Object.fromEntries(states)).toEqual({
      d0: 'done',
      [`d${MAX_STATE_IDS - 1}`]: 'sending',
      [`d${MAX_STATE_IDS}`]: 'failed',
      [`d${2 * MAX_STATE_IDS}`]: 'sending',
    });
    expect((await store.outbox.states([])).size).toBe(0);
  });
});

/** Copies the store (with its WAL and index when `withWal`) into a directory of its own, then makes both read-only. */
function copyStore(source: string, name: string, withWal: boolean): string {
  const dir = join(tempDir(), name);
  mkdirSync(dir);
  const path = join(dir, 'threadline.db');
  for (const suffix of withWal ? ['', '-wal', '-shm'] : ['']) {
    copyFileSync(`${source}${suffix}`, `${path}${suffix}`);
    chmodSync(`${path}${suffix}`, 0o444);
  }
  chmodSync(dir, 0o555);
  return path;
}

/**
 * The ids findLostInStore reads from the copy, as a user the permissions apply to: root ignores
 * them, so under root the read runs in a child process as `nobody`.
 */
function readCopy(path: string): string[] {
  const script = join(tempDir(), 'read-copy.mts');
  writeFileSync(
    script,
    `import { SqliteStore } from ${JSON.stringify(resolve('src/store/sqlite-store.ts'))};
     const store = await SqliteStore.openReadOnly(process.argv[2]);
     const lost = await store.outbox.overdue({ before: 1_000, limit: 10 });
     await store.close();
     console.log(JSON.stringify(lost.map((delivery) => delivery.id)));`,
  );
  chmodSync(tempDir(), 0o755);
  const root = process.getuid?.() === 0;
  const asNobody = root ? ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups'] : [];
  // This very node, where nobody may run it: npx keeps the Node 24 of CI under /root, closed to others.
  const node = root ? join(tempDir(), 'node') : process.execPath;
  if (root && !existsSync(node)) {
    copyFileSync(process.execPath, node);
    chmodSync(node, 0o755);
  }
  const command = [...asNobody, node, resolve('node_modules/tsx/dist/cli.mjs'), script, path];
  const output = execFileSync(command[0]!, command.slice(1), { encoding: 'utf8', env: { ...process.env, TSX_TSCONFIG_PATH: resolve('tsconfig.json') } });
  return JSON.parse(output.trim()) as string[];
}
