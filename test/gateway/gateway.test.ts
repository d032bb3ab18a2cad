import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Agent } from '../../src/agent/agent.js';
import { CommandAgent } from '../../src/gateway/commands/command-agent.js';
import { DeliveryError } from '../../src/errors.js';
import { Gateway } from '../../src/gateway/gateway.js';
import type { OutboundMessage, Platform } from '../../src/platforms/platform.js';
import { inboundContext } from '../../src/session/index.js';
import { SqliteStore } from '../../src/store/sqlite-store.js';
import type { DeliveryRecord } from '../../src/session/delivery.js';
import type { Store } from '../../src/store/store.js';
import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import { GatewayMetrics } from '../../src/telemetry/gateway-metrics.js';
import { installTestTelemetry } from '../../src/testing/index.js';
import { until, webhookOrigin } from '../helpers/gateway.js';

installTestTelemetry();

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A database path in a fresh temporary directory, removed after the test. */
function storePath(): string {
  const dir = mkdtempSync(join(tmpdir(), 'threadline-gateway-'));
  dirs.push(dir);
  return join(dir, 'test.db');
}

function sqliteStore(): Promise<SqliteStore> {
  return SqliteStore.open(storePath());
}

/** The store with its two bookkeeping writes (a delivery done, a message finished) replaced. */
type Bookkeeping = 'complete' | 'markDone';
type BookkeepingWrite = <T>(kind: Bookkeeping, id: string, commit: () => Promise<T>) => Promise<T>;
function withBookkeeping(store: Store, write: BookkeepingWrite): Store {
  return {
    messages: { ...store.messages, complete: (id) => write('complete', id, () => store.messages.complete(id)) },
    outbox: { ...store.outbox, markDone: (id, lease) => write('markDone', id, () => store.outbox.markDone(id, lease)) },
    homes: store.homes,
    conversations: store.conversations,
    processes: store.processes,
    schedules: store.schedules,
    history: store.history,
    calls: store.calls,
    location: store.location,
    probeWrite: () => store.probeWrite(),
    syncTokens: store.syncTokens,
    close: () => store.close(),
  };
}

/** What a test changes in the gateway: its agent, or how its platform sends. */
interface Overrides {
  readonly agent?: Agent;
  readonly send?: Platform['send'];
  readonly leaseMs?: number;
  readonly metrics?: GatewayMetrics;
}

/** Open (pending or sending) deliveries in the store. */
async function openDeliveries(store: Store): Promise<number> {
  return (await store.outbox.pressure(Number.MAX_SAFE_INTEGER)).open;
}

async function deliveryRecords(store: Store): Promise<DeliveryRecord[]> {
  return store.outbox.list({ limit: 100 });
}

function gatewayWith(store: Store, sent: OutboundMessage[], log: string[] = [], overrides: Overrides = {}): Gateway {
  const sink: Platform = {
    name: 'webhook',
    register: () => {},
    send:
      overrides.send ??
      (async (message) => {
        sent.push(message);
      }),
    describe: () => 'test sink',
  };
  return new Gateway({
    store,
    platforms: [sink],
    agent: overrides.agent ?? new CommandAgent(new Map()),
    logger: pino({ level: 'error' }, { write: (line: string) => void log.push(line) }),
    concurrency: 1,
    queueCapacity: 100,
    perUserGroupSessions: false,
    strictRouting: false,
    ...(overrides.metrics === undefined ? {} : { metrics: overrides.metrics }),
    outbox: {
      maxAttempts: 3,
      giveUpAfterMs: 86_400_000,
      backoff: { baseMs: 10, maxMs: 100, maxRetryAfterMs: 3_600_000 },
      maxInFlight: 1,
      leaseMs: overrides.leaseMs ?? 60_000,
      maxOpenPerDestination: 1_000,
      maxOpenTotal: 100_000,
    },
  });
}

/** A gateway over a fresh store, its bookkeeping through `write`, and what it sent and logged. */
async function harness(write: BookkeepingWrite, overrides: Overrides = {}) {
  const store = await sqliteStore();
  const sent: OutboundMessage[] = [];
  const log: string[] = [];
  return { store, sent, log, gateway: gatewayWith(withBookkeeping(store, write), sent, log, overrides) };
}

/** A promise that settles when `open()` is called: bookkeeping held back until then. */
function gate(): { readonly held: Promise<void>; readonly open: () => void } {
  let open!: () => void;
  const held = new Promise<void>((resolve) => (open = resolve));
  return { held, open };
}

async function pendingIds(store: Store): Promise<string[]> {
  return (await store.messages.pending()).map((message) => message.id);
}

/** A platform that takes the connection and never answers: only the shutdown signal ends a send. */
function neverAnswering(sends: string[]): Platform['send'] {
  return (message, signal) => {
    sends.push(message.id);
    return new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true }));
  };
}

/** The gateway started again over the store at `path`, sending to a recording sink. */
async function restartAt(path: string) {
  const store = await SqliteStore.open(path);
  const sent: OutboundMessage[] = [];
  const gateway = gatewayWith(store, sent);
  await gateway.start();
  return { store, sent, gateway };
}

function sendText(gateway: Gateway, chatId: string, text: string) {
  return gateway.accept({ session: { platform: 'webhook', chatType: 'dm', chatId }, text }, inboundContext({}));
}

describe('Gateway turns', () => {
  it('frees a turn slot once its replies are sent, without waiting for their bookkeeping to commit', async () => {
    const { held, open } = gate();
    const { store, sent, gateway } = await harness((_kind, _id, commit) => held.then(commit));
    await gateway.start();
    await sendText(gateway, 'a', 'first');
    await sendText(gateway, 'b', 'second');
    // One slot: the second turn runs only if the first let go before its records committed.
    await until(() => sent.length === 2, 3_000);
    expect(sent.map((message) => message.text)).toEqual(['first', 'second']);
    open();
    await gateway.stop(1_000);
    await store.close();
  });

  it.each<Bookkeeping>(['complete', 'markDone'])('stop() waits for %s to commit', async (gated) => {
    const { held, open } = gate();
    const { store, sent, gateway } = await harness((kind, _id, commit) => (kind === gated ? held.then(commit) : commit()));
    await gateway.start();
    await sendText(gateway, 'a', 'hello');
    await until(() => sent.length === 1);
    let stopped = false;
    const stopping = gateway.stop(1_000).then(() => (stopped = true));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(stopped).toBe(false);
    open();
    await stopping;
    // Nothing is left to replay or resend.
    expect(await pendingIds(store)).toEqual([]);
    expect(await openDeliveries(store)).toBe(0);
    await store.close();
  });

  it('logs a lost completion record; the message runs again after a restart without sending its reply twice', async () => {
    const { store, sent, log, gateway: failing } = await harness((kind, _id, commit) =>
      kind === 'markDone' ? commit() : Promise.reject(new Error('disk full')),
    );
    await failing.start();
    const accepted = await sendText(failing, 'a', 'once');
    await until(() => sent.length === 1);
    await failing.stop(1_000);
    expect(log.join('')).toContain('could not record message as finished');
    expect(await pendingIds(store)).toEqual([accepted.messageId]);

    const restarted = gatewayWith(store, sent);
    await restarted.start();
    await until(async () => (await store.messages.pending()).length === 0);
    await restarted.stop(1_000);
    expect(sent.map((message) => message.text)).toEqual(['once']);
    await store.close();
  });

  it('logs a store that throws instead of rejecting, and keeps the message for the next start', async () => {
    const { store, log, gateway: throwing } = await harness((kind, _id, commit) => {
      if (kind === 'complete') throw new Error('not connected');
      return commit();
    });
    await throwing.start();
    const accepted = await sendText(throwing, 'a', 'kept');
    await until(() => log.join('').includes('could not finish message'));
    await throwing.stop(1_000);
    expect(await pendingIds(store)).toEqual([accepted.messageId]);
    await store.close();
  });

  it('sends a delivery again under the same key when its done record was lost, once its lease ends', async () => {
    let lost = 0;
    const sent: { id: string; at: number }[] = [];
    const { store, log, gateway } = await harness(
      (kind, _id, commit) => (kind === 'markDone' && lost++ === 0 ? Promise.reject(new Error('disk full')) : commit()),
      { leaseMs: 300, send: async (message) => void sent.push({ id: message.id, at: Date.now() }) },
    );
    await gateway.start();
    await sendText(gateway, 'a', 'once');
    await until(() => sent.length === 2);
    expect(log.join('')).toContain('sent again when its lease ends');
    // The same key, not before the lease ended, and nothing else had to wake the outbox.
    expect(sent[0]!.id).toBe(sent[1]!.id);
    expect(sent[1]!.at - sent[0]!.at).toBeGreaterThanOrEqual(300 - 5);
    await until(async () => (await openDeliveries(store)) === 0);
    await gateway.stop(1_000);
    expect((await deliveryRecords(store)).map((record) => record.status)).toEqual(['done']);
    await store.close();
  });
});

describe('Gateway stop', () => {
  /** Resolves once stop() has run for `ms`, so a hanging stop fails the test instead of its timeout. */
  async function stopWithin(gateway: Gateway, timeoutMs: number, limitMs: number): Promise<number> {
    const started = Date.now();
    const stopped = gateway.stop(timeoutMs).then(() => Date.now() - started);
    const tooLate = new Promise<number>((resolve) => setTimeout(resolve, limitMs, Number.POSITIVE_INFINITY));
    return Promise.race([stopped, tooLate]);
  }

  it('keeps to its deadline when a send never answers; the reply and the message wait for the next start', async () => {
    const store = await sqliteStore();
    const sends: string[] = [];
    const gateway = gatewayWith(store, [], [], { send: neverAnswering(sends) });
    await gateway.start();
    await sendText(gateway, 'a', 'hello');
    await until(() => sends.length === 1);
    expect(await stopWithin(gateway, 300, 5_000)).toBeLessThan(300 + 1_000);
    expect(await openDeliveries(store)).toBe(1);
    expect(await pendingIds(store)).toHaveLength(1);
    await store.close();
  });

  it('does not wait for a turn that ignores its abort signal, and says so', async () => {
    const store = await sqliteStore();
    const log: string[] = [];
    let started = false;
    const agent: Agent = {
      handle: () => {
        started = true;
        return new Promise(() => {});
      },
    };
    const gateway = gatewayWith(store, [], log, { agent });
    await gateway.start();
    await sendText(gateway, 'a', 'hello');
    await until(() => started);
    expect(await stopWithin(gateway, 200, 5_000)).toBeLessThan(200 + 1_500);
    expect(await pendingIds(store)).toHaveLength(1);
    expect(log.join('')).toContain('ignored its abort signal');
    await store.close();
  });

  it('records a turn cut off by stop as aborted, on the metrics it was given', async () => {
    const reader = new (class extends MetricReader {
      protected override onForceFlush = () => Promise.resolve();
      protected override onShutdown = () => Promise.resolve();
    })();
    const metrics = new GatewayMetrics(new MeterProvider({ readers: [reader] }).getMeter('threadline'));
    const store = await sqliteStore();
    let started = false;
    const agent: Agent = {
      handle: (turn) => {
        started = true;
        return new Promise((resolve) => turn.signal.addEventListener('abort', () => resolve(), { once: true }));
      },
    };
    const gateway = gatewayWith(store, [], [], { agent, metrics });
    await gateway.start();
    await sendText(gateway, 'a', 'hello');
    await until(() => started);
    await gateway.stop(50);
    const { resourceMetrics } = await reader.collect();
    const turns = resourceMetrics.scopeMetrics.flatMap((scope) => scope.metrics).find((metric) => metric.descriptor.name === 'threadline.turn.duration')!;
    expect(turns.dataPoints.map((point) => [point.attributes, (point.value as { count: number }).count])).toEqual([
      [{ 'messaging.system': 'webhook', 'threadline.turn.result': 'aborted' }, 1],
    ]);
    await store.close();
  });

  it('stops reading its gauges even when a step of stop fails, so no collection reads a closed store', async () => {
    const reader = new (class extends MetricReader {
      protected override onForceFlush = () => Promise.resolve();
      protected override onShutdown = () => Promise.resolve();
    })();
    const metrics = new GatewayMetrics(new MeterProvider({ readers: [reader] }).getMeter('threadline'));
    const store = await sqliteStore();
    let outboxReads = 0;
    const counted: Store = {
      messages: store.messages,
      outbox: { ...store.outbox, pressure: (max) => (outboxReads++, store.outbox.pressure(max)) },
      homes: store.homes,
      conversations: store.conversations,
      processes: store.processes,
      schedules: store.schedules,
      history: store.history,
      calls: store.calls,
      location: store.location,
      probeWrite: () => store.probeWrite(),
      syncTokens: store.syncTokens,
      close: () => store.close(),
    };
    const gateway = gatewayWith(counted, [], [], { metrics });
    await gateway.start();
    await reader.collect();
    expect(outboxReads).toBe(1);
    vi.spyOn(gateway.outbox, 'recorded').mockRejectedValueOnce(new Error('disk I/O error'));
    await expect(gateway.stop(50)).rejects.toThrow('disk I/O error');
    await reader.collect();
    expect(outboxReads).toBe(1);
    await store.close();
  });

  it('runs a message whose accept was under way when stop began, instead of answering 202 and leaving it', async () => {
    const store = await sqliteStore();
    const { held, open } = gate();
    const slowAppend: Store = {
      ...store,
      probeWrite: () => store.probeWrite(),
      close: () => store.close(),
      messages: { ...store.messages, accept: (message, checks) => held.then(() => store.messages.accept(message, checks)) },
    };
    const sent: OutboundMessage[] = [];
    const gateway = gatewayWith(slowAppend, sent);
    await gateway.start();
    const accepted = sendText(gateway, 'a', 'in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
    const stopped = gateway.stop(2_000);
    await new Promise((resolve) => setTimeout(resolve, 20));
    open();
    await accepted;
    await stopped;
    expect(sent.map((message) => message.text)).toEqual(['in time']);
    expect(await pendingIds(store)).toEqual([]);
    await store.close();
  });

  it('starts no retry once stop has begun, even one the store was still looking up', async () => {
    const store = await sqliteStore();
    await store.outbox.add(
      { id: 'left/1', kind: 'reply', destination: { platform: 'webhook', chatId: 'a' }, text: 'left over', origin: webhookOrigin('a', 's'), createdAt: 0 },
      0,
    );
    const { held, open } = gate();
    let lookups = 0;
    const slowLookup: Store = {
      ...store,
      probeWrite: () => store.probeWrite(),
      close: () => store.close(),
      outbox: { ...store.outbox, claim: (...args) => (++lookups, held.then(() => store.outbox.claim(...args))) },
    };
    const sent: OutboundMessage[] = [];
    const gateway = gatewayWith(slowLookup, sent);
    await gateway.start();
    await until(() => lookups === 1);
    const stopped = gateway.stop(1_000);
    open();
    await stopped;
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(sent).toEqual([]);
    expect(await openDeliveries(store)).toBe(1);
    await store.close();
  });

  it('keeps a Retry-After across a restart: a throttled delivery is not sent again at start-up', async () => {
    const path = storePath();
    const first = await SqliteStore.open(path);
    let refusals = 0;
    const throttled: Platform['send'] = async () => {
      refusals++;
      throw new DeliveryError('429 Too Many Requests', { retryable: true, retryAfterMs: 3_600_000 });
    };
    const before = gatewayWith(first, [], [], { send: throttled });
    await before.start();
    await sendText(before, 'a', 'later');
    await until(() => refusals === 1);
    await before.stop(1_000);
    await first.close();

    const after = await restartAt(path);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(after.sent).toEqual([]);
    const [throttledRecord] = await deliveryRecords(after.store);
    expect(throttledRecord).toMatchObject({ status: 'pending', attempts: 1 });
    expect(throttledRecord!.dueAt).toBeGreaterThan(Date.now() + 3_500_000);
    await after.gateway.stop(1_000);
    await after.store.close();
  });

  it('sends a delivery cut off by stop at the next start, without counting the cut-off as an attempt', async () => {
    const path = storePath();
    const first = await SqliteStore.open(path);
    const sends: string[] = [];
    const before = gatewayWith(first, [], [], { send: neverAnswering(sends) });
    await before.start();
    await sendText(before, 'a', 'cut off');
    await until(() => sends.length === 1);
    await before.stop(100);
    const [left] = await deliveryRecords(first);
    expect(left).toMatchObject({ status: 'sending', attempts: 0 });
    await first.close();

    const after = await restartAt(path);
    await until(() => after.sent.length >= 1);
    await after.gateway.stop(1_000);
    // The turn runs again too, and its reply keeps its id: one send.
    expect(after.sent.map((message) => message.text)).toEqual(['cut off']);
    expect(await openDeliveries(after.store)).toBe(0);
    await after.store.close();
  });
});

describe('Gateway delivery order', () => {
  /** A platform that refuses the first send of `text` with a Retry-After, and records what it sent. */
  function refusingOnce(text: string, retryAfterMs: number, sent: OutboundMessage[]): Platform['send'] {
    let refused = false;
    return async (message) => {
      if (message.text === text && !refused) {
        refused = true;
        throw new DeliveryError('503 Service Unavailable', { retryable: true, retryAfterMs });
      }
      sent.push(message);
    };
  }

  it('keeps a chat\'s replies in order when the first waits for its retry, without holding other chats back', async () => {
    const store = await sqliteStore();
    const sent: OutboundMessage[] = [];
    const gateway = gatewayWith(store, sent, [], { send: refusingOnce('one', 1_000, sent) });
    await gateway.start();
    await sendText(gateway, 'a', 'one');
    await sendText(gateway, 'a', 'two');
    await sendText(gateway, 'b', 'other chat');
    await until(() => sent.length === 3);
    expect(sent.map((message) => message.text)).toEqual(['other chat', 'one', 'two']);
    await gateway.stop(1_000);
    await store.close();
  });

  it('keeps the order across a restart: a new reply waits behind the chat\'s reply left pending', async () => {
    const path = storePath();
    const first = await SqliteStore.open(path);
    // Every send refused, so "one" is still pending whenever this process stops.
    const refuseAll: Platform['send'] = async () => {
      throw new DeliveryError('503 Service Unavailable', { retryable: true, retryAfterMs: 400 });
    };
    const before = gatewayWith(first, [], [], { send: refuseAll });
    await before.start();
    await sendText(before, 'a', 'one');
    await until(async () => (await deliveryRecords(first)).some((record) => record.status === 'pending') && (await pendingIds(first)).length === 0);
    await before.stop(1_000);
    await first.close();

    const after = await restartAt(path);
    await sendText(after.gateway, 'a', 'two');
    await until(() => after.sent.length === 2);
    expect(after.sent.map((message) => message.text)).toEqual(['one', 'two']);
    await after.gateway.stop(1_000);
    await after.store.close();
  });
});

