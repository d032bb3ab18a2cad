import { rmSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { Agent } from '../../src/agent/agent.js';
import { CommandAgent } from '../../src/gateway/commands/command-agent.js';
import { Gateway } from '../../src/gateway/gateway.js';
import { readGatewayConfig } from '../../src/gateway/gateway-config.js';
import { buildServer } from '../../src/gateway/server.js';
import { storeRefused } from '../../src/store/sqlite-connection.js';
import { SqliteStore } from '../../src/store/sqlite-store.js';
import { STORE_METHODS, type StoreTable } from '../../src/store/store-writes.js';
import { startGateway } from '../../src/start/start-gateway.js';
import { createLogger } from '../../src/telemetry/logger.js';
import type { AnyStore, OutboxPressure, Store } from '../../src/store/store.js';
import { startTestGateway } from '../../src/testing/index.js';
import { until } from '../helpers/gateway.js';
import { useTempDir } from '../helpers/temp-dir.js';

const tempDir = useTempDir('health');
const cleanups: (() => Promise<unknown> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** How the store answers the probes' query: as it is, with an error, or never. */
type StoreMode = 'answers' | 'fails' | 'hangs';

/** The probes' store: how it answers, how often it was asked, and a way to answer the queries left hanging. */
interface ProbedStore {
  set(mode: StoreMode): void;
  /** Probe queries the store was asked so far. */
  queries(): number;
  /** Answers every hung query with an empty outbox. */
  answerHung(): void;
}

/** A gateway (not started) behind its HTTP face, over a SQLite store whose probe query the test controls. */
async function probedGateway(): Promise<{ gateway: Gateway; app: FastifyInstance; setStore(mode: StoreMode): void; store: ProbedStore }> {
  const sqlite = await SqliteStore.open(`${tempDir()}/health-${cleanups.length}.db`);
  let mode: StoreMode = 'answers';
  let queries = 0;
  const hung: ((pressure: OutboxPressure) => void)[] = [];
  const pressure = (max: number): Promise<OutboxPressure> => {
    queries++;
    if (mode === 'fails') return Promise.reject(new Error('disk I/O error'));
    if (mode === 'hangs') return new Promise((resolve) => hung.push(resolve));
    return sqlite.outbox.pressure(max);
  };
  const answerHung = () => {
    for (const answer of hung.splice(0)) answer({ open: 0, fullDestinations: 0 });
  };
  const store: Store = {
    messages: sqlite.messages,
    outbox: { ...sqlite.outbox, pressure },
    homes: sqlite.homes,
    conversations: sqlite.conversations,
    processes: sqlite.processes,
    schedules: sqlite.schedules,
    history: sqlite.history,
    calls: sqlite.calls,
    location: sqlite.location,
    probeWrite: () => sqlite.probeWrite(),
    syncTokens: sqlite.syncTokens,
    close: () => sqlite.close(),
  };
  const config = readGatewayConfig({ THREADLINE_DATA_DIR: tempDir() });
  const logger = pino({ level: 'silent' });
  const gateway = new Gateway({
    store,
    platforms: [],
    agent: new CommandAgent(new Map()),
    logger,
    concurrency: 1,
    queueCapacity: 10,
    perUserGroupSessions: false,
    strictRouting: false,
    outbox: {
      maxAttempts: 3,
      giveUpAfterMs: 60_000,
      backoff: { baseMs: 10, maxMs: 100, maxRetryAfterMs: 1_000 },
      maxInFlight: 1,
      leaseMs: 60_000,
      maxOpenPerDestination: 10,
      maxOpenTotal: 100,
    },
  });
  const app = buildServer(gateway, [], logger, config.http, { storeTimeoutMs: 50 });
  cleanups.push(async () => {
    mode = 'answers';
    answerHung();
    await gateway.stop(0);
    await app.close();
    await sqlite.close();
  });
  const setStore = (next: StoreMode) => void (mode = next);
  return { gateway, app, setStore, store: { set: setStore, queries: () => queries, answerHung } };
}

/**
 * A real SQLite store whose every write fails, while `full` is set, as SQLite fails it on a
 * full disk (SQLITE_FULL, through the connection's own error), its reads going on.
 */
function fullDiskStore(sqlite: SqliteStore): { store: AnyStore; fill(full: boolean): void } {
  let full = false;
  const refused = () => Promise.reject(storeRefused('a write', Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' })));
  const table = <T extends StoreTable>(name: T): AnyStore[T] => {
    const kinds = STORE_METHODS[name] as Record<string, string>;
    return new Proxy(sqlite[name], {
      get: (object, property, receiver) => {
        const value: unknown = Reflect.get(object, property, receiver);
        if (typeof value !== 'function' || kinds[String(property)] !== 'write') return value;
        return (...args: unknown[]) => (full ? refused() : (value as (...args: unknown[]) => unknown).apply(object, args));
      },
    }) as AnyStore[T];
  };
  const store: AnyStore = {
    messages: table('messages'),
    outbox: table('outbox'),
    homes: table('homes'),
    conversations: table('conversations'),
    processes: table('processes'),
    schedules: table('schedules'),
    history: table('history'),
    calls: table('calls'),
    syncTokens: table('syncTokens'),
    location: sqlite.location,
    probeWrite: () => (full ? refused() : sqlite.probeWrite()),
    close: () => sqlite.close(),
  };
  return { store, fill: (next) => void (full = next) };
}

/** A probe's status and JSON body; fails fast rather than waiting out the test's timeout if it hangs. */
async function probe(app: FastifyInstance, path: '/v1/health' | '/v1/ready'): Promise<{ status: number; body: Record<string, unknown> }> {
  const hung = new Promise<never>((_resolve, reject) => setTimeout(() => reject(new Error(`${path} did not answer`)), 5_000).unref());
  const response = await Promise.race([app.inject({ method: 'GET', url: path }), hung]);
  return { status: response.statusCode, body: response.json() as Record<string, unknown> };
}

describe('/v1/health (alive) and /v1/ready (takes messages)', () => {
  it('while starting: alive, not ready (TL_STARTING); both 200 once intake opens', async () => {
    const { gateway, app } = await probedGateway();
    expect(await probe(app, '/v1/health')).toMatchObject({ status: 200, body: { status: 'starting', queued: 0, outbox_pending: 0 } });
    const ready = await probe(app, '/v1/ready');
    expect(ready.status).toBe(503);
    expect(ready.body).toEqual({ error: expect.stringContaining('starting'), code: 'TL_STARTING' });

    await gateway.start();
    expect(await probe(app, '/v1/ready')).toEqual({ status: 200, body: { status: 'ok', reasons: [] } });
    expect(await probe(app, '/v1/health')).toMatchObject({ status: 200, body: { status: 'ok', reasons: [] } });
  });

  it('when the store fails: alive and saying why, not ready (TL_STORE_FAILED); ready again once it answers', async () => {
    const { gateway, app, setStore } = await probedGateway();
    await gateway.start();
    setStore('fails');
    const health = await probe(app, '/v1/health');
    expect(health.status).toBe(200);
    expect(health.body).toMatchObject({ status: 'degraded', queued: 0, outbox_pending: null });
    expect(String((health.body['reasons'] as string[])[0])).toMatch(/TL_STORE_FAILED.*disk I\/O error/);
    expect(await probe(app, '/v1/ready')).toEqual({
      status: 503,
      body: { error: expect.stringContaining('disk I/O error'), code: 'TL_STORE_FAILED' },
    });

    setStore('answers');
    expect((await probe(app, '/v1/ready')).status).toBe(200);
  });

  it('when the store hangs: both answer within the probe timeout, ready with 503 TL_STORE_FAILED', async () => {
    const { gateway, app, setStore } = await probedGateway();
    await gateway.start();
    setStore('hangs');
    expect(await probe(app, '/v1/ready')).toEqual({
      status: 503,
      body: { error: 'The store did not answer within 50 ms', code: 'TL_STORE_FAILED' },
    });
    const health = await probe(app, '/v1/health');
    expect(health).toMatchObject({ status: 200, body: { status: 'degraded' } });
    expect(String((health.body['reasons'] as string[])[0])).toContain('did not answer within 50 ms');
  });

  it('when the store hangs: probes share the one query under way instead of queueing one each, and ask again once it settles', async () => {
    const { gateway, app, store } = await probedGateway();
    await gateway.start();
    store.set('hangs');
    const before = store.queries();
    for (let i = 0; i < 4; i++) expect((await probe(app, '/v1/ready')).body).toMatchObject({ code: 'TL_STORE_FAILED' });
    expect((await probe(app, '/v1/health')).body).toMatchObject({ status: 'degraded' });
    expect(store.queries() - before).toBe(1);

    store.set('answers');
    store.answerHung();
    // The answered query settles before the next probe, which then asks the store anew.
    await new Promise((resolve) => setImmediate(resolve));
    expect(await probe(app, '/v1/ready')).toEqual({ status: 200, body: { status: 'ok', reasons: [] } });
    expect(store.queries() - before).toBe(2);
  });

  it('while draining: alive (status stopping), not ready (TL_SHUTTING_DOWN), until the turn under way has finished', async () => {
    let turnStarted!: () => void;
    const started = new Promise<void>((resolve) => (turnStarted = resolve));
    let finishTurn!: () => void;
    const finish = new Promise<void>((resolve) => (finishTurn = resolve));
    const agent: Agent = {
      async handle(turn) {
        turnStarted();
        await finish;
        await turn.reply('done');
      },
    };
    const g = await startTestGateway({ agent });
    let stopped: Promise<void> | undefined;
    cleanups.push(async () => {
      finishTurn();
      await (stopped ?? g.running.stop());
      await g.receiver.close();
      rmSync(g.dataDir, { recursive: true, force: true });
    });
    const get = async (path: string) => {
      const response = await fetch(`${g.url}${path}`);
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    };
    expect((await get('/v1/ready')).status).toBe(200);
    expect((await g.send({ chat_id: 'c', text: 'slow' })).status).toBe(202);
    await started;

    stopped = g.running.stop();
    await until(async () => (await get('/v1/ready')).status === 503);
    expect((await get('/v1/ready')).body).toEqual({ error: expect.stringContaining('stopping'), code: 'TL_SHUTTING_DOWN' });
    expect(await get('/v1/health')).toMatchObject({ status: 200, body: { status: 'stopping', queued: 1 } });

    finishTurn();
    await stopped;
    expect(g.receiver.unique().size).toBe(1);
  });

  it('when the store refuses writes (a full disk) while it reads: not ready until a write succeeds; no path in any answer, the path in the log', async () => {
    const dir = tempDir();
    const path = `${dir}/full-${cleanups.length}.db`;
    const disk = fullDiskStore(await SqliteStore.open(path));
    const lines: string[] = [];
    const logger = createLogger({ level: 'info', destination: { write: (line: string) => void lines.push(line) } });
    const config = readGatewayConfig({ THREADLINE_DATA_DIR: dir, PORT: '0', HOST: '127.0.0.1' });
    const running = await startGateway(config, { logger, store: disk.store });
    cleanups.push(() => running.stop());
    const get = async (route: string) => {
      const response = await fetch(`${running.url}${route}`);
      return { status: response.status, text: await response.text() };
    };
    const post = async () => {
      const response = await fetch(`${running.url}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ chat_id: 'c', text: 'hi' }) });
      return { status: response.status, text: await response.text() };
    };
    expect((await get('/v1/ready')).status).toBe(200);

    disk.fill(true);
    const refused = await post();
    expect(refused.status).toBe(503);
    expect(JSON.parse(refused.text)).toEqual({ error: 'The store refused a write: database or disk is full (SQLITE_FULL)', code: 'TL_STORE_FAILED' });
    const ready = await get('/v1/ready');
    expect(ready.status).toBe(503);
    expect(JSON.parse(ready.text)).toEqual({ error: expect.stringMatching(/SQLITE_FULL.*ready again once a write succeeds$/), code: 'TL_STORE_FAILED' });
    const health = await get('/v1/health');
    expect(health.status).toBe(200);
    expect(JSON.parse(health.text)).toMatchObject({ status: 'degraded', reasons: [expect.stringContaining('the store refuses writes (TL_STORE_FAILED)')] });
    for (const answer of [refused, ready, health]) expect(answer.text).not.toContain(dir);
    // Said once, with where the store is, however many writes fail.
    const said = lines.map((line) => JSON.parse(line) as { msg: string; store?: string }).filter((record) => record.msg.startsWith('the store refused a write'));
    expect(said).toEqual([expect.objectContaining({ store: path })]);

    // The disk has room again: the probe's own write finds it, with no message needed first.
    disk.fill(false);
    expect(await get('/v1/ready')).toEqual({ status: 200, text: JSON.stringify({ status: 'ok', reasons: [] }) });
    expect((await post()).status).toBe(202);
  });
});
