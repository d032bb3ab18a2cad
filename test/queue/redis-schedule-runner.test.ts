import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { trace, type SpanContext } from '@opentelemetry/api';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { DeliveryRequest } from '../../src/deliveries/router.js';
import { destinationOf } from '../../src/session/routing-mismatch.js';
import { ThreadlineError } from '../../src/errors.js';
import { redisLeaseFactory } from '../../src/queue/leader-lease.js';
import { RedisScheduleRunner, type RedisScheduleRunnerOptions } from '../../src/queue/redis-schedule-runner.js';
import { tickOf } from '../../src/queue/schedule-job.js';
import { captureRouting, requireSession, withSession } from '../../src/session/index.js';
import type { RedisKeys } from '../../src/store/redis/redis-keys.js';
import type { ScheduleRecord, ScheduleTable, Store } from '../../src/store/store.js';
import { cronTicksUnchecked } from '../../src/tools/cron/cron-expression.js';
import { createScheduler, type ParseCron } from '../../src/tools/cron/index.js';
import { executeTool } from '../../src/tools/execute-tool.js';
import type { Deliverer } from '../../src/tools/deliver-later.js';
import type { Tool, ToolResult } from '../../src/tools/tool.js';
import type { ToolServices } from '../../src/tools/tool-services.js';
import { until } from '../helpers/gateway.js';
import { useRedis } from '../helpers/redis.js';
import { FULL_SESSION } from '../helpers/sessions.js';
import { useGlobalTracing } from '../helpers/tracing.js';
import { useRedisStores } from '../store/redis/redis-store.fixture.js';
import { LEASES, runnerServices } from './schedule-runner-parts.js';

const redis = useRedis();
const tracing = useGlobalTracing();
const openStore = useRedisStores(redis);

/** Every second: finer than parseCron allows a user, so a test sees many ticks in a few seconds. */
const EVERY_SECOND = '* * * * * *';
const secondsCron: ParseCron = cronTicksUnchecked;
/** Ticks every `ms`, whatever the expression: a grid a test can place a time off. */
const everyMs =
  (ms: number): ParseCron =>
  () => ({ nextAfter: (after) => Math.floor(after / ms) * ms + ms });

/** One delivery a runner handed to the outbox: which runner, the request, and the span it ran in. */
interface Handed {
  readonly runner: string;
  readonly request: DeliveryRequest;
  readonly span: SpanContext | undefined;
  readonly at: number;
}

/** What every runner of a test delivers to, as the shared outbox would record it (one record per delivery id). */
class SharedOutbox {
  readonly handed: Handed[] = [];
  readonly recorded = new Set<string>();
  /** Decides a delivery's failure; what it returns is thrown. */
  failWith: ((request: DeliveryRequest) => unknown) | undefined;

  for(runner: string): Deliverer {
    return {
      deliver: async (request) => {
        const failure = this.failWith?.(request);
        if (failure !== undefined) throw failure;
        this.handed.push({ runner, request, span: trace.getActiveSpan()?.spanContext(), at: Date.now() });
        this.recorded.add(request.id);
      },
    };
  }

  /** The runs that reached the outbox with delivery id `id`. */
  runsOf(id: string): Handed[] {
    return this.handed.filter((handed) => handed.request.id === id);
  }
}

interface TestRunner {
  readonly runner: RedisScheduleRunner;
  readonly services: ToolServices;
  readonly tools: Map<string, Tool>;
  /** What the runner logged at info and above. */
  readonly logs: { readonly level: number; readonly msg: string }[];
  /** Calls a tool as the gateway does, inside FULL_SESSION, admin allowed. */
  call(name: string, args: Record<string, unknown>): Promise<ToolResult>;
}

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A Redis connection for commands, closed after the test. */
function connect(): Redis {
  const connection = new Redis(redis.url, { maxRetriesPerRequest: 1 });
  cleanups.push(() => connection.disconnect());
  return connection;
}

/** What a test changes in how a runner is made beside its options. */
interface RunnerParts {
  /** Stands in for some of the schedule table's calls; each gets the table's own to call through. */
  readonly schedules?: (table: ScheduleTable) => Partial<ScheduleTable>;
  /** Called for each connection the runner asks for (its worker's). */
  readonly onConnection?: () => void;
}

/** A runner of its own (its own connections, as another instance would have) on `keys`, with the tools over it; stopped after the test. */
function makeRunner(name: string, keys: RedisKeys, outbox: SharedOutbox, options: Partial<RedisScheduleRunnerOptions> = {}, parts: RunnerParts = {}): TestRunner {
  const commands = connect();
  const logs: TestRunner['logs'] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => logs.push(JSON.parse(line) as TestRunner['logs'][number]) });
  const plain = runnerServices(commands, keys, outbox.for(name), logger);
  const table = plain.store.schedules;
  const services: ToolServices =
    parts.schedules === undefined ? plain : { ...plain, store: { schedules: { ...table, ...parts.schedules(table) } } as unknown as Store };
  const workerConnections: Redis[] = [];
  const connection = (): Redis => {
    parts.onConnection?.();
    const made = new Redis(redis.url, { maxRetriesPerRequest: null });
    workerConnections.push(made);
    return made;
  };
  const runner = new RedisScheduleRunner({ services, commands, connection, keys, work: true, parseCron: secondsCron, ...LEASES, ...options });
  // As the backend closes: the worker first, then its connection (a worker cut off first waits out BullMQ's retry delay).
  cleanups.push(async () => {
    await runner.stop();
    for (const made of workerConnections) made.disconnect();
  });
  const built = createScheduler(services, { maxPerChat: 100, maxPerUser: 100, maxTotal: 1_000, adminReserve: 0 }, () => runner);
  const tools = new Map(built.tools.map((tool) => [tool.name, tool]));
  return {
    runner,
    services,
    tools,
    logs,
    call: (tool, args) => withSession(FULL_SESSION, () => executeTool(tools.get(tool)!, args, { signal: new AbortController().signal, authorize: async () => true })),
  };
}

/** Runners a and b on `keys`, as two instances sharing one Redis, both started. */
async function startedPair(keys: RedisKeys, outbox: SharedOutbox): Promise<[TestRunner, TestRunner]> {
  const pair: [TestRunner, TestRunner] = [makeRunner('a', keys, outbox), makeRunner('b', keys, outbox)];
  for (const made of pair) await made.runner.start();
  return pair;
}

/** A record as the schedule tool stores it, created in FULL_SESSION inside an `execute_tool schedule` span. */
function cronRecord(id: string, cron: string | undefined, nextAt: number): ScheduleRecord {
  return withSession(FULL_SESSION, () =>
    tracing.tracer.startActiveSpan('execute_tool schedule', (span) => {
      const origin = captureRouting();
      span.end();
      const record = { id, origin, destination: destinationOf(requireSession()), target: 'origin', text: `tick of ${id}`, nextAt, createdAt: Date.now() };
      return cron === undefined ? record : { ...record, cron };
    }),
  );
}

/** The queue the runners share, to look at what Redis holds. */
function schedulesQueue(keys: RedisKeys): Queue {
  const queue = new Queue(keys.schedulesQueue, { connection: connect(), prefix: keys.queuePrefix });
  cleanups.push(() => queue.close());
  return queue;
}

const idOf = (result: ToolResult): string => /\bc[0-9a-z]{5}\b/.exec(result.text)![0];
const cronRuns = (): string[] => tracing.spans().filter((span) => span.name === 'cron.run').map((span) => String(span.attributes['delivery.id']));
const countOf = (ids: readonly string[], id: string): number => ids.filter((each) => each === id).length;
const CAPS = { maxPerDestination: 10, maxTotal: 10 };
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
/** The due times of the runs of `id` the outbox recorded, in the order they reached it. */
const ticksOf = (outbox: SharedOutbox, id: string): number[] =>
  outbox.handed.filter((handed) => handed.request.id.startsWith(`cron:${id}:`)).map((handed) => Number(handed.request.id.split(':')[2]));
/** Waits until the wall clock is at most `ms` into its second, so a tick a second away is still most of a second away. */
async function earlyInASecond(ms: number): Promise<void> {
  while (Date.now() % 1_000 > ms) await sleep(Math.max(1, 1_000 - (Date.now() % 1_000)));
}

describe('the BullMQ schedule runner', () => {
  it('runs a reminder once after its delay, in a new trace linked to the span that set it, then forgets it', async () => {
    const { keys } = openStore();
    const outbox = new SharedOutbox();
    const [a, b] = await startedPair(keys, outbox);
    const setAt = Date.now();
    const id = idOf(await a.call('remind', { delay: '1s', text: 'tea is ready' }));
    const record = (await a.services.store.schedules.get(id))!;
    // Told again by another instance, as a start reconciling it would: still one job.
    await b.runner.added(record);
    expect(await schedulesQueue(keys).getJobCounts('delayed', 'wait', 'active')).toEqual({ delayed: 1, wait: 0, active: 0 });
    const delivery = `cron:${id}:${record.nextAt}`;
    await until(() => outbox.recorded.has(delivery), 15_000);
    // Nothing left in Redis that could run it again.
    const queue = schedulesQueue(keys);
    await until(async () => Object.values(await queue.getJobCounts('delayed', 'wait', 'active', 'completed', 'failed')).every((count) => count === 0), 15_000);
    expect(outbox.handed.map((handed) => handed.request.id)).toEqual([delivery]);
    expect(cronRuns()).toEqual([delivery]);
    const [run] = outbox.handed;
    expect(run!.at).toBeGreaterThanOrEqual(setAt + 1_000);
    expect(run!.request).toMatchObject({ kind: 'cron', text: 'tea is ready', target: { to: 'origin' } });
    const creating = tracing.span('execute_tool remind').spanContext();
    const runSpan = tracing.span('cron.run');
    expect(runSpan.parentSpanContext).toBeUndefined();
    expect(runSpan.spanContext().traceId).not.toBe(creating.traceId);
    expect(runSpan.links.map((link) => link.context.spanId)).toEqual([creating.spanId]);
    expect(run!.span).toEqual(runSpan.spanContext());
    expect(await a.services.store.schedules.get(id)).toBeUndefined();
  });

  it('runs a cron job once per tick with two runners on one prefix: by delivery id and by runs', async () => {
    const { keys } = openStore();
    const outbox = new SharedOutbox();
    const [a, b] = await startedPair(keys, outbox);
    // The first tick is still most of a second away when the queue is looked at below.
    await earlyInASecond(200);
    const record = cronRecord('ctick1', EVERY_SECOND, secondsCron(EVERY_SECOND).nextAfter(Date.now())!);
    await a.services.store.schedules.add(record, CAPS);
    // Both instances are told, as when two reconcile at once: still one scheduler, with one next tick.
    await Promise.all([a.runner.added(record), b.runner.added(record)]);
    const queue = schedulesQueue(keys);
    expect(await queue.getJobSchedulersCount()).toBe(1);
    expect(await queue.getJobCounts('delayed', 'wait', 'active')).toEqual({ delayed: 1, wait: 0, active: 0 });
    await until(() => outbox.recorded.size >= 6, 30_000);
    // The record follows the runs, for `list`.
    expect((await a.services.store.schedules.get(record.id))!.nextAt).toBeGreaterThanOrEqual(record.nextAt + 5_000);
    await a.runner.removed(record);
    await a.services.store.schedules.remove(record.id);
    const ids = outbox.handed.map((handed) => handed.request.id);
    // Every run reached the outbox with an id of its own: no tick ran twice, on either runner.
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids) expect(countOf(cronRuns(), id), id).toBe(1);
    expect(cronRuns().length).toBe(ids.length);
    const ticks = ids.map((id) => Number(id.split(':')[2])).sort((x, y) => x - y);
    expect(ticks[0]).toBe(record.nextAt);
    // One tick after the other: none lost between two runs.
    expect(ticks.slice(1).map((tick, i) => tick - ticks[i]!)).toEqual(ticks.slice(1).map(() => 1_000));
  });

  it("takes its ticks from the runner's parseCron, on the queue (the first tick) and on the worker (each next one)", async () => {
    const { keys } = openStore();
    const outbox = new SharedOutbox();
    // Every second and a half, whatever the expression: BullMQ's own cron-parser reads this one as once a year.
    const everySecondAndAHalf: ParseCron = () => ({ nextAfter: (after) => Math.floor(after / 1_500) * 1_500 + 1_500 });
    const a = makeRunner('a', keys, outbox, { parseCron: everySecondAndAHalf });
    await a.runner.start();
    const record = cronRecord('cyearl', '0 0 1 1 *', everySecondAndAHalf('0 0 1 1 *').nextAfter(Date.now())!);
    await a.services.store.schedules.add(record, CAPS);
    await a.runner.added(record);
    await until(() => outbox.recorded.size >= 3, 15_000);
    const ticks = outbox.handed.map((handed) => Number(handed.request.id.split(':')[2]));
    expect(ticks[0]).toBe(record.nextAt);
    for (const tick of ticks) expect(tick % 1_500).toBe(0);
    expect(new Set(ticks).size).toBe(ticks.length);
  });

  it('stops running a job once it is removed: no scheduler and no run left in Redis', async () => {
    const { keys } = openStore();
    const outbox = new SharedOutbox();
    const a = makeRunner('a', keys, outbox);
    await a.runner.start();
    // Far enough off that it cannot run before it is removed.
    const reminder = idOf(await a.call('remind', { delay: '10m', text: 'never' }));
    const record = cronRecord('ctick2', EVERY_SECOND, secondsCron(EVERY_SECOND).nextAfter(Date.now())!);
    await a.services.store.schedules.add(record, CAPS);
    await a.runner.added(record);
    await until(() => outbox.recorded.size >= 2, 15_000);
    await a.call('remove_schedule', { id: record.id });
    await a.call('remove_schedule', { id: reminder });
    const queue = schedulesQueue(keys);
    expect(await queue.getJobSchedulersCount()).toBe(0);
    expect(await queue.getJobCounts('delayed')).toEqual({ delayed: 0 });
    const ran = outbox.handed.length;
    // A tick taken before the removal may still end (finding the record gone); then nothing is left to run.
    await until(async () => Object.values(await queue.getJobCounts('delayed', 'wait', 'active')).every((count) => count === 0), 15_000);
    expect(outbox.handed.length).toBeLessThanOrEqual(ran + 1);
    expect(outbox.handed.every((handed) => handed.request.id.startsWith(`cron:${record.id}:`))).toBe(true);
  });

  it('at start, schedules the records stored before it: a missed run once, then the ticks; a stray scheduler goes', async () => {
    const { keys } = openStore();
    const outbox = new SharedOutbox();
    const a = makeRunner('a', keys, outbox);
    const b = makeRunner('b', keys, outbox);
    const now = Date.now();
    // Due ten seconds ago (stored while no instance ran), one due soon, and a reminder missed.
    const missed = cronRecord('cmiss1', EVERY_SECOND, Math.floor(now / 1_000) * 1_000 - 10_000);
    const soon = cronRecord('crem01', undefined, now + 1_500);
    const late = cronRecord('crem02', undefined, now - 3_000);
    for (const record of [missed, soon, late]) await a.services.store.schedules.add(record, CAPS);
    // A scheduler whose record is gone: its removal did not reach Redis.
    const queue = schedulesQueue(keys);
    await queue.upsertJobScheduler('cgone1', { pattern: '0 0 1 1 *' }, { name: 'cron', data: { id: 'cgone1' } });
    // Two instances starting at once.
    await Promise.all([a.runner.start(), b.runner.start()]);
    expect((await queue.getJobSchedulers()).map((scheduler) => scheduler.key)).toEqual(['cmiss1']);
    const missedRun = `cron:${missed.id}:${missed.nextAt}`;
    await until(() => outbox.recorded.has(missedRun) && outbox.recorded.has(`cron:${soon.id}:${soon.nextAt}`) && outbox.recorded.has(`cron:${late.id}:${late.nextAt}`), 15_000);
    // The missed ticks are not run one by one: after the missed run, the job continues from now.
    await until(() => outbox.handed.filter((handed) => handed.request.id.startsWith(`cron:${missed.id}:`)).length >= 3, 15_000);
    const runs = outbox.handed.map((handed) => handed.request.id);
    expect(new Set(runs).size).toBe(runs.length);
    const missedTicks = runs.filter((id) => id.startsWith(`cron:${missed.id}:`)).map((id) => Number(id.split(':')[2]));
    expect(missedTicks[0]).toBe(missed.nextAt);
    expect(missedTicks.slice(1).every((tick) => tick > now)).toBe(true);
    for (const id of runs) expect(countOf(cronRuns(), id), id).toBe(1);
  });

  it('a job whose run happened already (its record moved past it) does nothing: a job run again after a lost lock', async () => {
    const { keys } = openStore();
    const outbox = new SharedOutbox();
    const a = makeRunner('a', keys, outbox);
    await a.runner.start();
    const now = Date.now();
    const record = cronRecord('cmoved', '0 0 1 1 *', now + 3_600_000);
    await a.services.store.schedules.add(record, CAPS);
    const queue = schedulesQueue(keys);
    // The run due a minute ago, as a job handed back after its run advanced the record.
    await queue.add('run', { id: record.id, dueAt: now - 60_000 }, { jobId: `due:${record.id}:${now - 60_000}`, removeOnComplete: false });
    await until(async () => (await queue.getJobCounts('completed')).completed === 1, 15_000);
    expect(outbox.handed).toEqual([]);
    expect(cronRuns()).toEqual([]);
    expect((await a.services.store.schedules.get(record.id))!.nextAt).toBe(record.nextAt);
  });

  it('a run refused for now is tried again after the retry pause, under the same delivery id', async () => {
    const { keys } = openStore();
    const outbox = new SharedOutbox();
    const a = makeRunner('a', keys, outbox, { retryMs: 500 });
    await a.runner.start();
    let refused = 0;
    outbox.failWith = () => (refused++ < 2 ? new ThreadlineError('TL_STORE_FAILED', 'the outbox could not record it') : undefined);
    const id = idOf(await a.call('remind', { delay: '1s', text: 'flaky' }));
    const record = (await a.services.store.schedules.get(id))!;
    await until(() => outbox.recorded.size === 1, 15_000);
    expect(refused).toBe(3);
    expect(outbox.handed.map((handed) => handed.request.id)).toEqual([`cron:${id}:${record.nextAt}`]);
    expect(outbox.handed[0]!.at - record.nextAt).toBeGreaterThanOrEqual(1_000);
    expect(await a.services.store.schedules.get(id)).toBeUndefined();
  });

  it('a catch-up run (a later job running a run still due) refused for now gets a job of its own, tried after the pause', async () => {
    const { keys } = openStore();
    const outbox = new SharedOutbox();
    let refused = 0;
    outbox.failWith = () => (refused++ < 1 ? new ThreadlineError('TL_STORE_FAILED', 'the outbox could not record it') : undefined);
    const a = makeRunner('a', keys, outbox, { retryMs: 300 });
    await a.runner.start();
    const now = Date.now();
    // Stored without its job (as after a failed add), a year between ticks: only the catch-up can run it.
    const record = cronRecord('ccatch', '0 0 1 1 *', now - 60_000);
    await a.services.store.schedules.add(record, CAPS);
    const queue = schedulesQueue(keys);
    await queue.add('run', { id: record.id, dueAt: now }, { jobId: `due:${record.id}:${now}` });
    await until(() => outbox.recorded.size === 1, 15_000);
    expect(refused).toBe(2);
    expect(outbox.handed.map((handed) => handed.request.id)).toEqual([`cron:${record.id}:${record.nextAt}`]);
  });

  it('a run whose instance is killed (SIGKILL) in the middle runs on another instance once its lock lapses', async () => {
    const { keys } = openStore();
    const outbox = new SharedOutbox();
    // Adds and removes only, as an instance without turn workers.
    const adder = makeRunner('adder', keys, outbox, { work: false });
    await adder.runner.start();
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/queue/schedule-runner.fixture.ts', redis.url, keys.prefix], { stdio: ['ignore', 'pipe', 'inherit'] });
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
    cleanups.push(() => {
      child.kill('SIGKILL');
    });
    const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
    /** The child's next line; a child that dies first fails the test with its exit code instead of leaving it waiting. */
    const nextLine = async (): Promise<unknown> => {
      const next = await Promise.race([lines.next(), exited]);
      if ('signal' in next) return expect.fail(`the fixture exited (code ${next.code}, signal ${next.signal}) before its next line`);
      return next.value;
    };
    expect(await nextLine()).toBe('started');
    const id = idOf(await adder.call('remind', { delay: '1s', text: 'survives' }));
    const record = (await adder.services.store.schedules.get(id))!;
    const delivery = `cron:${id}:${record.nextAt}`;
    // The child has taken the job and is in the middle of its run.
    expect(await nextLine()).toBe(`running ${delivery}`);
    child.kill('SIGKILL');
    expect(await exited).toEqual({ code: null, signal: 'SIGKILL' });
    const survivor = makeRunner('survivor', keys, outbox);
    await survivor.runner.start();
    await until(() => outbox.recorded.has(delivery), 15_000);
    expect(outbox.handed.map((handed) => [handed.runner, handed.request.id])).toEqual([['survivor', delivery]]);
    expect(await adder.services.store.schedules.get(id)).toBeUndefined();
  });

  it('a run refused across several ticks is retried by its own job alone, which keeps one stack trace in Redis', async () => {
    const { keys } = openStore();
    const outbox = new SharedOutbox();
    let refused = 0;
    outbox.failWith = () => {
      refused++;
      return new ThreadlineError('TL_STORE_FAILED', 'the outbox could not record it');
    };
    const a = makeRunner('a', keys, outbox, { retryMs: 400 });
    await a.runner.start();
    const now = Date.now();
    const cron = cronRecord('crefus', EVERY_SECOND, secondsCron(EVERY_SECOND).nextAfter(now)!);
    const reminder = cronRecord('crefur', undefined, now + 300);
    for (const record of [cron, reminder]) {
      await a.services.store.schedules.add(record, CAPS);
      await a.runner.added(record);
    }
    // Several ticks come while every run is refused.
    await until(() => Date.now() > cron.nextAt + 3_500 && refused >= 6, 15_000);
    const queue = schedulesQueue(keys);
    const retrying = (await queue.getJobs(['delayed', 'wait', 'active', 'prioritized'])).filter((job) => job.attemptsMade > 0);
    // The cron's first run is its tick's job, or a job of its own when the machine was slow enough that it was due before the add.
    const cronRun = retrying.some((job) => job.id === `due:${cron.id}:${cron.nextAt}`) ? `due:${cron.id}:${cron.nextAt}` : `repeat:${cron.id}:${cron.nextAt}`;
    expect(retrying.map((job) => job.id).sort()).toEqual([`due:${reminder.id}:${reminder.nextAt}`, cronRun].sort());
    for (const job of retrying) {
      expect(job.attemptsMade, job.id).toBeGreaterThan(1);
      expect(job.stacktrace, job.id).toHaveLength(1);
    }
    // The worker's next tick carries the limit on, as it does every option.
    const next = (await queue.getJobScheduler(cron.id))!.next!;
    expect(next).toBeGreaterThan(cron.nextAt + 3_000);
    expect((await queue.getJob(`repeat:${cron.id}:${next}`))!.opts.stackTraceLimit).toBe(1);
    expect((await a.services.store.schedules.get(cron.id))!.nextAt).toBe(cron.nextAt);
  });

  it('a stored cron expression that no longer parses runs once more at its due time, which removes it and says why', async () => {
    const { keys } = openStore();
    const outbox = new SharedOutbox();
    const leases = redisLeaseFactory({ redis: connect(), keys, instanceId: 'test', leaseMs: 600, logger: pino({ level: 'silent' }) });
    // Reconciled several times before its run: it is said once all the same.
    const a = makeRunner('a', keys, outbox, { lease: () => leases('schedules-reconcile'), reconcileEveryMs: 200 });
    // As a newer croner, or a runtime without its time zone, reads an expression stored before.
    const record = cronRecord('cbroke', 'not a cron', Date.now() + 1_500);
    await a.services.store.schedules.add(record, CAPS);
    await a.runner.start();
    const delivery = `cron:${record.id}:${record.nextAt}`;
    await until(() => outbox.recorded.has(delivery), 15_000);
    await until(async () => (await a.services.store.schedules.get(record.id)) === undefined, 15_000);
    const queue = schedulesQueue(keys);
    expect(await queue.getJobSchedulersCount()).toBe(0);
    await until(async () => Object.values(await queue.getJobCounts('delayed', 'wait', 'active', 'failed')).every((count) => count === 0), 15_000);
    expect(outbox.handed.map((handed) => handed.request.id)).toEqual([delivery]);
    expect(outbox.handed[0]!.at).toBeGreaterThanOrEqual(record.nextAt);
    expect(a.logs.filter((line) => line.level >= 50).map((line) => line.msg)).toEqual([
      expect.stringContaining('gives no next run'),
      expect.stringContaining('no longer parses; the job is removed'),
    ]);
  });

  it('a run due before the first tick BullMQ computes (a tick boundary between the two clocks) runs at its time, and so does that tick', async () => {
    const { keys } = openStore();
    const outbox = new SharedOutbox();
    const grid = everyMs(2_000);
    const a = makeRunner('a', keys, outbox, { parseCron: grid });
    await a.runner.start();
    // Early in a step of the grid, and due a little later: before the grid's next tick, BullMQ's first.
    while (Date.now() % 2_000 > 600) await sleep(20);
    const now = Date.now();
    const first = grid(EVERY_SECOND).nextAfter(now)!;
    const record = cronRecord('cbound', EVERY_SECOND, now + 300);
    await a.services.store.schedules.add(record, CAPS);
    await a.runner.added(record);
    await until(() => ticksOf(outbox, record.id).length >= 3, 15_000);
    expect(ticksOf(outbox, record.id).slice(0, 3)).toEqual([record.nextAt, first, first + 2_000]);
    // Its own run came at its time, not with the first tick.
    expect(outbox.runsOf(`cron:${record.id}:${record.nextAt}`)[0]!.at).toBeLessThan(first);
  });

  it('at start, a cron job overdue whose scheduler is there runs at once, not at its next tick, then keeps its ticks', async () => {
    const { keys } = openStore();
    const outbox = new SharedOutbox();
    const hourly = everyMs(3_600_000);
    const a = makeRunner('a', keys, outbox, { parseCron: hourly });
    // Its run due a few seconds ago has no job (lost), while its scheduler waits for the next hour.
    const record = cronRecord('coverd', '0 * * * *', Date.now() - 5_000);
    await a.services.store.schedules.add(record, CAPS);
    const queue = new Queue(keys.schedulesQueue, { connection: connect(), prefix: keys.queuePrefix, settings: { repeatStrategy: (millis) => hourly('').nextAfter(millis) } });
    cleanups.push(() => queue.close());
    await queue.upsertJobScheduler(record.id, { pattern: '0 * * * *', tz: 'UTC' }, { name: 'cron', data: { id: record.id } });
    await a.runner.start();
    const delivery = `cron:${record.id}:${record.nextAt}`;
    await until(() => outbox.recorded.has(delivery), 15_000);
    await until(async () => (await a.services.store.schedules.get(record.id))!.nextAt > Date.now(), 15_000);
    expect(cronRuns()).toEqual([delivery]);
    expect(await queue.getJobSchedulersCount()).toBe(1);
    expect((await a.services.store.schedules.get(record.id))!.nextAt).toBe((await queue.getJobScheduler(record.id))!.next);
  });

  it('at start, a scheduler left without its next tick is made again', async () => {
    const { keys, redis: commands } = openStore();
    const outbox = new SharedOutbox();
    const a = makeRunner('a', keys, outbox);
    const queue = new Queue(keys.schedulesQueue, { connection: connect(), prefix: keys.queuePrefix, settings: { repeatStrategy: (millis) => secondsCron(EVERY_SECOND).nextAfter(millis) } });
    cleanups.push(() => queue.close());
    const next = (await queue.upsertJobScheduler('cstuck', { pattern: EVERY_SECOND, tz: 'UTC' }, { name: 'cron', data: { id: 'cstuck' } }))!;
    // Its next tick is gone (a worker that took it could not add the one after): the scheduler is there, and nothing ticks.
    await commands.zrem(queue.keys['delayed']!, next.id!);
    await commands.del(queue.toKey(next.id!));
    const record = cronRecord('cstuck', EVERY_SECOND, tickOf(next.id)!);
    await a.services.store.schedules.add(record, CAPS);
    await a.runner.start();
    await until(() => ticksOf(outbox, record.id).length >= 3, 15_000);
    const ticks = ticksOf(outbox, record.id);
    expect(new Set(ticks).size).toBe(ticks.length);
    expect(await queue.getJobSchedulersCount()).toBe(1);
  });

  it('matches the queue to the store every period on the instance holding the lease; a round that fails is logged, the next one done', async () => {
    const { keys } = openStore();
    const outbox = new SharedOutbox();
    const leases = redisLeaseFactory({ redis: connect(), keys, instanceId: 'test', leaseMs: 600, logger: pino({ level: 'silent' }) });
    const rounds = { a: 0, b: 0 };
    const counted =
      (name: keyof typeof rounds) =>
      (table: ScheduleTable): Partial<ScheduleTable> => ({
        all: async () => {
          rounds[name]++;
          // The first round after the start fails, as while Redis is away for a moment.
          if (rounds[name] === 2) throw new ThreadlineError('TL_REDIS_UNAVAILABLE', 'Redis failed a command');
          return table.all();
        },
      });
    const periodic = { lease: () => leases('schedules-reconcile'), reconcileEveryMs: 300 };
    const a = makeRunner('a', keys, outbox, periodic, { schedules: counted('a') });
    const b = makeRunner('b', keys, outbox, periodic, { schedules: counted('b') });
    await Promise.all([a.runner.start(), b.runner.start()]);
    // Stored without its job: its added() failed, and so did taking it out of the store again.
    const record = cronRecord('cnojob', undefined, Date.now() + 300);
    await a.services.store.schedules.add(record, CAPS);
    const delivery = `cron:${record.id}:${record.nextAt}`;
    await until(() => outbox.recorded.has(delivery), 15_000);
    await until(() => rounds.a + rounds.b >= 6, 15_000);
    // One instance reconciles each period; the other did at its start only.
    expect(Math.min(rounds.a, rounds.b)).toBe(1);
    const holder = rounds.a > 1 ? a : b;
    expect(holder.logs.filter((line) => line.level >= 50).map((line) => line.msg)).toEqual([expect.stringContaining('could not match the schedules queue')]);
    expect(outbox.runsOf(delivery)).toHaveLength(1);
  });

  it('a stop that comes while the start reconciles leaves no worker behind', async () => {
    const { keys } = openStore();
    const outbox = new SharedOutbox();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let reading = false;
    let connections = 0;
    const a = makeRunner(
      'a',
      keys,
      outbox,
      {},
      {
        schedules: (table) => ({
          all: async () => {
            reading = true;
            await gate;
            return table.all();
          },
        }),
        onConnection: () => {
          connections++;
        },
      },
    );
    const started = a.runner.start();
    await until(() => reading);
    const stopped = a.runner.stop();
    release();
    await Promise.all([started, stopped]);
    // A worker asks for its connection as it is made.
    expect(connections).toBe(0);
  });

  it('a run that finds its job removed after it read the record does not deliver', async () => {
    const { keys } = openStore();
    const outbox = new SharedOutbox();
    let removed = false;
    const a = makeRunner(
      'a',
      keys,
      outbox,
      {},
      {
        schedules: (table) => ({
          get: async (id) => {
            const record = await table.get(id);
            // /cron rm lands just after the run read the record.
            if (record !== undefined && !removed) {
              removed = true;
              await table.remove(id);
            }
            return record;
          },
        }),
      },
    );
    await a.runner.start();
    const record = cronRecord('cgoing', undefined, Date.now() + 200);
    await a.services.store.schedules.add(record, CAPS);
    await a.runner.added(record);
    await until(() => removed, 15_000);
    const queue = schedulesQueue(keys);
    await until(async () => Object.values(await queue.getJobCounts('delayed', 'wait', 'active', 'failed')).every((count) => count === 0), 15_000);
    expect(outbox.handed).toEqual([]);
    expect(cronRuns()).toEqual([]);
  });

  it("hands the record's time zone to parseCron for every tick: the first on the queue, each next one on the worker", async () => {
    const { keys } = openStore();
    const outbox = new SharedOutbox();
    // Kolkata's ticks fall a quarter second into each second, UTC's on it: a tick's due time shows the zone it was computed in.
    const zoned: ParseCron = (_expression, timezone) => {
      const offset = timezone === 'Asia/Kolkata' ? 250 : 0;
      return { nextAfter: (after) => Math.floor((after - offset) / 1_000) * 1_000 + 1_000 + offset };
    };
    const a = makeRunner('a', keys, outbox, { parseCron: zoned });
    await a.runner.start();
    const record = { ...cronRecord('czoned', EVERY_SECOND, zoned(EVERY_SECOND, 'Asia/Kolkata').nextAfter(Date.now())!), timezone: 'Asia/Kolkata' };
    await a.services.store.schedules.add(record, CAPS);
    await a.runner.added(record);
    await until(() => ticksOf(outbox, record.id).length >= 3, 15_000);
    // The scheduler's next tick now is the worker's, three ticks on.
    const next = (await schedulesQueue(keys).getJobScheduler(record.id))!.next!;
    expect(next).toBeGreaterThanOrEqual(record.nextAt + 3_000);
    expect(next % 1_000).toBe(250);
    const ticks = ticksOf(outbox, record.id);
    expect(ticks.slice(1).map((tick, i) => tick - ticks[i]!)).toEqual(ticks.slice(1).map(() => 1_000));
    for (const tick of ticks) expect(tick % 1_000).toBe(250);
  });
});
