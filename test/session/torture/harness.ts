// Shared by every torture case: seeded randomness, the session generator, async hops, a
// semaphore, and the Probe that counts reads and spans that saw the wrong session.
// vitest is imported lazily, by the verdicts only: worker threads load this module too, and
// importing vitest there would triple their start-up time.
// TORTURE_SEED=n replays a run; TORTURE_VERBOSE=1 prints each case's mismatch counts.
import { ROOT_CONTEXT, defaultTextMapGetter, propagation, type Tracer } from '@opentelemetry/api';
import { W3CBaggagePropagator } from '@opentelemetry/core';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { CHAT_TYPES, createSession, names, type Session } from '../../../src/session/index.js';
import type { SessionRuntime } from './runtime.js';

/** Concurrent sessions per case, as the issue asks. */
export const SESSIONS = 2000;

/** Override with TORTURE_SEED to replay a run; printed in every failure message. */
export const SEED = Number(process.env['TORTURE_SEED'] ?? 0x7e1ead);

export type Rng = () => number;

/** mulberry32: tiny, fast, good enough to pick delays reproducibly. */
export function mulberry32(seed: number): Rng {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * One generator per (case, session), so a session's delays do not depend on the order in
 * which concurrent sessions happen to draw numbers.
 */
export function rngFor(salt: string, index: number): Rng {
  let hash = 0x811c9dc5 ^ SEED;
  for (const char of `${salt}#${index}`) hash = Math.imul(hash ^ char.charCodeAt(0), 0x01000193);
  return mulberry32(hash);
}

const PLATFORMS = ['telegram', 'slack', 'discord', 'matrix'];

/**
 * `count` distinct sessions, ids prefixed by `label` so sets never overlap. Ids hold ':' '/'
 * and unicode (astral too); a third have no thread; every twelfth pair would collide if ids
 * were joined with ':' ("kN:x"+"y" vs "kN"+"x:y"; pitfall: Colliding session keys).
 */
export function makeSessions(count: number, label: string): Session[] {
  const sessions: Session[] = [];
  for (let i = 0; i < count; i++) {
    const base = `${label}${i}`;
    const chatIds = [base, `C:${base}/general`, `!room/${base}:matrix.org`, `чат-${base}-💬`, `群組:${base}/話題`, `+${base}@c.us`];
    const threadIds = [`${i}`, `topic:${i}/reply`, `スレッド/${i}`];
    let chatId = chatIds[i % chatIds.length]!;
    let threadId = i % 3 === 0 ? undefined : threadIds[(i >> 1) % threadIds.length];
    if (i % 12 === 5) [chatId, threadId] = [`k${base}:x`, 'y'];
    if (i % 12 === 11) [chatId, threadId] = [`k${label}${i - 6}`, 'x:y'];
    sessions.push(
      createSession({
        platform: PLATFORMS[(i >> 2) % PLATFORMS.length]!,
        chatType: CHAT_TYPES[i % CHAT_TYPES.length]!,
        chatId,
        ...(threadId === undefined ? {} : { threadId }),
        ...(i % 5 === 0 ? { userId: `u:${i}` } : {}),
        ...(i % 7 === 0 ? { messageId: `m/${i}` } : {}),
      }),
    );
  }
  if (new Set(sessions.map((session) => session.sessionId)).size !== count) throw new Error(`session ids of ${label} collide`);
  return sessions;
}

/** One async hop of a random kind: microtask, nextTick, setImmediate or a 0–3 ms timer. */
export function hop(rng: Rng): Promise<void> {
  const kind = Math.floor(rng() * 4);
  return new Promise<void>((resolve) => {
    if (kind === 0) queueMicrotask(resolve);
    else if (kind === 1) process.nextTick(resolve);
    else if (kind === 2) setImmediate(resolve);
    else setTimeout(resolve, Math.floor(rng() * 4));
  });
}

/** Enters all sessions at once (no await between them) and waits for all. */
export async function forEachSession(
  runtime: SessionRuntime,
  sessions: readonly Session[],
  salt: string,
  body: (session: Session, index: number, rng: Rng) => Promise<void>,
): Promise<void> {
  await Promise.all(sessions.map((session, index) => runtime.run(session, () => body(session, index, rngFor(salt, index)))));
}

/**
 * Hands a callback to code that runs it later (`schedule`), bound to the session when
 * `bind` is given, and waits for it. Three reads: in the callback, after a hop inside it,
 * and back in the session after it ran.
 */
export async function callbackRoundTrip(
  probe: Probe,
  session: Session,
  rng: Rng,
  where: string,
  schedule: (callback: () => Promise<void>) => void,
  bind: <F extends (...args: never[]) => unknown>(fn: F) => F = (fn) => fn,
): Promise<void> {
  await new Promise<void>((resolve) => {
    schedule(
      bind(async () => {
        probe.read(session, `${where}: callback`);
        await hop(rng);
        probe.read(session, `${where}: callback after a hop`);
        resolve();
      }),
    );
  });
  probe.read(session, `${where}: after the callback`);
}

/** Bounds parallelism of a shared resource; created outside any session, like a real pool. */
export class Semaphore {
  private readonly waiting: (() => void)[] = [];

  constructor(private free: number) {}

  async use<T>(fn: () => Promise<T>): Promise<T> {
    if (this.free > 0) this.free--;
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
    try {
      return await fn();
    } finally {
      const next = this.waiting.shift();
      if (next === undefined) this.free++;
      else next();
    }
  }
}

/** Values handed from one session to another by index; created outside any session. */
export class Mailbox<T> {
  private readonly slots = new Map<number, { promise: Promise<T>; resolve: (value: T) => void }>();

  put(index: number, value: T): void {
    this.slot(index).resolve(value);
  }

  take(index: number): Promise<T> {
    return this.slot(index).promise;
  }

  private slot(index: number): { promise: Promise<T>; resolve: (value: T) => void } {
    let slot = this.slots.get(index);
    if (slot === undefined) {
      let resolve!: (value: T) => void;
      const promise = new Promise<T>((done) => (resolve = done));
      slot = { promise, resolve };
      this.slots.set(index, slot);
    }
    return slot;
  }
}

/** What a boundary let through of a session, whatever carried it (context, env, baggage, a message). */
export interface Observed {
  readonly platform?: string | undefined;
  readonly chatType?: string | undefined;
  readonly chatId?: string | undefined;
  readonly threadId?: string | undefined;
  readonly sessionId?: string | undefined;
}
export type Field = keyof Observed;
export const ROUTING_FIELDS: readonly Field[] = ['platform', 'chatType', 'chatId', 'threadId', 'sessionId'];
/** What threadline's default outbound policy puts in baggage. */
export const BAGGAGE_FIELDS: readonly Field[] = ['platform', 'chatId', 'threadId', 'sessionId'];

/** Plain routing fields of a session, e.g. to send through postMessage or JSON. */
export function observe(session: Observed | undefined): Observed | undefined {
  if (session === undefined) return undefined;
  const { platform, chatType, chatId, threadId, sessionId } = session;
  return { platform, chatType, chatId, threadId, sessionId };
}

/** The routing a child process would find in `env` (THREADLINE_SESSION_* variables). */
export function observedFromEnv(env: Readonly<Record<string, string | undefined>>): Observed {
  return {
    platform: env['THREADLINE_SESSION_PLATFORM'],
    chatType: env['THREADLINE_SESSION_CHAT_TYPE'],
    chatId: env['THREADLINE_SESSION_CHAT_ID'],
    threadId: env['THREADLINE_SESSION_THREAD_ID'],
    sessionId: env['THREADLINE_SESSION_ID'],
  };
}

const baggageParser = new W3CBaggagePropagator();

/** Decodes a W3C baggage header (percent-encoded values) into the routing it carries. */
export function observedFromBaggage(header: string | undefined): Observed | undefined {
  if (header === undefined) return undefined;
  const baggage = propagation.getBaggage(baggageParser.extract(ROOT_CONTEXT, { baggage: header }, defaultTextMapGetter));
  if (baggage === undefined) return undefined;
  return {
    platform: baggage.getEntry(names.CHAT_PLATFORM)?.value,
    chatId: baggage.getEntry(names.CHAT_ID)?.value,
    threadId: baggage.getEntry(names.CHAT_THREAD_ID)?.value,
    sessionId: baggage.getEntry(names.SESSION_ID)?.value,
  };
}

const NONE = 'none';
const SPAN_ATTRIBUTES: readonly [string, (session: Session) => string | undefined][] = [
  [names.CHAT_PLATFORM, (session) => session.platform],
  [names.CHAT_TYPE, (session) => session.chatType],
  [names.CHAT_ID, (session) => session.chatId],
  [names.CHAT_THREAD_ID, (session) => session.threadId],
  [names.SESSION_ID, (session) => session.sessionId],
  [names.GEN_AI_CONVERSATION_ID, (session) => session.sessionId],
];
const MAX_SAMPLES = 5;

/**
 * Counts reads that saw the wrong session, and starts a span at each read; the span's name
 * names the session it should carry, so the stamped attributes can be checked at the end.
 * Counting instead of asserting inline lets the naive runtime run to completion.
 */
export class Probe {
  readonly exporter = new InMemorySpanExporter();
  readonly provider: BasicTracerProvider;
  readonly tracer: Tracer;
  reads = 0;
  mismatches = 0;
  readonly samples: string[] = [];
  private readonly known = new Map<string, Session>();

  constructor(readonly runtime: SessionRuntime) {
    this.provider = new BasicTracerProvider({
      spanProcessors: [runtime.spanProcessor(), new SimpleSpanProcessor(this.exporter)],
    });
    this.tracer = this.provider.getTracer('torture');
  }

  /** A span name that records which session (or none) the span must carry. */
  spanName(where: string, expected: Session | undefined): string {
    if (expected === undefined) return `${where}#${NONE}`;
    this.known.set(expected.sessionId, expected);
    return `${where}#${expected.sessionId}`;
  }

  /** Reads the runtime's current session here, and starts and ends a span here. */
  read(expected: Session | undefined, where: string): void {
    this.compare(expected, this.runtime.current(), where);
    this.tracer.startSpan(this.spanName(where, expected)).end();
  }

  /** Compares what a boundary delivered with the session it should have delivered. */
  compare(expected: Session | undefined, actual: Observed | undefined, where: string, fields: readonly Field[] = ROUTING_FIELDS): void {
    this.reads++;
    const wrong = fields.filter((field) => expected?.[field] !== actual?.[field]);
    if (wrong.length === 0) return;
    this.mismatches++;
    this.sample(`${where}: expected ${JSON.stringify(observe(expected))}, got ${JSON.stringify(observe(actual))}`);
  }

  /** Checks every finished span's routing attributes against the session its name records. */
  async spanReport(): Promise<{ count: number; mismatches: number }> {
    await this.provider.forceFlush();
    const spans = this.exporter.getFinishedSpans();
    let mismatches = 0;
    for (const span of spans) {
      const id = span.name.slice(span.name.lastIndexOf('#') + 1);
      const expected = id === NONE ? undefined : this.known.get(id);
      if (id !== NONE && expected === undefined) throw new Error(`span ${span.name} names no known session`);
      const wrong = SPAN_ATTRIBUTES.filter(([key, value]) => span.attributes[key] !== (expected && value(expected)));
      if (wrong.length === 0) continue;
      mismatches++;
      this.sample(`span ${span.name}: ${wrong.map(([key]) => `${key}=${JSON.stringify(span.attributes[key])}`).join(' ')}`);
    }
    return { count: spans.length, mismatches };
  }

  private sample(text: string): void {
    if (this.samples.length < MAX_SAMPLES) this.samples.push(text);
  }
}

function report(probe: Probe, what: string): string {
  return `${probe.runtime.name} runtime, ${what} (TORTURE_SEED=${SEED}):\n${probe.samples.join('\n')}`;
}

/**
 * The verdict of every case: all reads and spans happened; the real runtime got every one
 * right, the naive one got at least one wrong (else the case could not catch a leak).
 */
export async function expectIsolation(probe: Probe, expected: { reads: number; spans: number }): Promise<void> {
  const { expect } = await import('vitest');
  const spans = await probe.spanReport();
  if (process.env['TORTURE_VERBOSE']) {
    console.log(`${probe.runtime.name}: ${probe.mismatches}/${probe.reads} reads and ${spans.mismatches}/${spans.count} spans saw another session`);
  }
  expect(probe.reads, 'reads made').toBe(expected.reads);
  expect(spans.count, 'spans finished').toBe(expected.spans);
  if (probe.runtime.isolates) {
    expect(probe.mismatches, report(probe, 'reads that saw another session')).toBe(0);
    expect(spans.mismatches, report(probe, 'spans stamped with another session')).toBe(0);
  } else {
    expect(probe.mismatches, report(probe, 'no read saw another session, so this case cannot fail')).toBeGreaterThan(0);
    if (expected.spans > 0) expect(spans.mismatches, report(probe, 'no span was misstamped')).toBeGreaterThan(0);
  }
}

/**
 * For the documented pitfalls (pitfalls: Callbacks in their creator's context; Long-lived loops holding a request's context): without the helper, reads go wrong in every
 * runtime, the real one included.
 */
export async function expectLeak(probe: Probe, expected: { reads: number; realMismatches?: number }): Promise<void> {
  const { expect } = await import('vitest');
  if (process.env['TORTURE_VERBOSE']) console.log(`${probe.runtime.name} pitfall: ${probe.mismatches}/${probe.reads} reads saw another session`);
  expect(probe.reads, 'reads made').toBe(expected.reads);
  expect(probe.mismatches, report(probe, 'the pitfall did not show')).toBeGreaterThan(0);
  if (probe.runtime.isolates && expected.realMismatches !== undefined) {
    expect(probe.mismatches, report(probe, 'reads that went wrong')).toBe(expected.realMismatches);
  }
}
