import { describe, expect, it } from 'vitest';
import { ThreadlineError } from '../../../src/errors.js';
import type { SessionInput } from '../../../src/session/index.js';
import { CRON_RETRY_MS } from '../../../src/tools/cron/index.js';
import { FULL_SESSION, sessionInput } from '../../helpers/sessions.js';
import { useGlobalTracing } from '../../helpers/tracing.js';
import { START, idIn, useCronHarness, type CronHarness, type HarnessOptions } from './cron-harness.js';

const tracing = useGlobalTracing();
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const ORIGIN = { platform: 'telegram', chatId: FULL_SESSION.chatId, threadId: '42' };

const cronHarness = useCronHarness();

/** A harness whose scheduler has started. */
async function started(options: HarnessOptions = {}): Promise<CronHarness> {
  const harness = await cronHarness(options);
  await harness.scheduler.start();
  return harness;
}

/** A small seeded generator (mulberry32): the same "random" delays on every run. */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('reminders', () => {
  it('fire once, at their time, with their text, in the chat and thread they came from', async () => {
    const { call, clock, deliverer, schedules } = await started();
    const id = idIn(await call('remind', { delay: '10m', text: 'tea is ready' }));
    await clock.advance(10 * MINUTE - 1);
    expect(deliverer.delivered).toEqual([]);
    await clock.advance(1);
    expect(deliverer.delivered).toHaveLength(1);
    const [run] = deliverer.delivered;
    expect(run!.at).toBe(START + 10 * MINUTE);
    expect(run!.request).toMatchObject({ id: `cron:${id}:${START + 10 * MINUTE}`, kind: 'cron', text: 'tea is ready', target: { to: 'origin' } });
    expect(run!.destination).toEqual(ORIGIN);
    expect(run!.session).toMatchObject({ chatId: ORIGIN.chatId, threadId: '42', userId: 'u-7' });
    await clock.advance(24 * HOUR);
    expect(deliverer.delivered).toHaveLength(1);
    expect(await schedules.get(id)).toBeUndefined();
    expect(clock.pending).toBe(0);
  });

  it('1,000 created at once from 1,000 sessions, random delays: each lands exactly once at its own origin', async () => {
    const { call, clock, deliverer, warnings } = await started();
    const random = seeded(20260105);
    const sessions: SessionInput[] = Array.from({ length: 1000 }, (_, i) =>
      sessionInput({ chatId: `chat-${i}`, threadId: i % 2 === 0 ? `topic-${i}` : undefined, userId: `user-${i}`, messageId: `m-${i}` }),
    );
    const delays = sessions.map(() => 1 + Math.floor(random() * 2 * 24 * 3600));
    const answers = await Promise.all(sessions.map((session, i) => call('remind', { delay: `${delays[i]}s`, text: `for ${i}` }, session)));
    const ids = answers.map(idIn);
    // Steps that are not a multiple of anything in particular: runs fall inside and on their edges.
    for (let elapsed = 0; elapsed <= 2 * 24 * HOUR + HOUR; elapsed += 37 * MINUTE) await clock.advance(37 * MINUTE);
    expect(deliverer.delivered).toHaveLength(1000);
    sessions.forEach((session, i) => {
      const dueAt = START + delays[i]! * 1000;
      const runs = deliverer.withId(`cron:${ids[i]}:${dueAt}`);
      expect(runs, `reminder ${i}`).toHaveLength(1);
      const [run] = runs;
      expect(run!.at).toBe(dueAt);
      expect(run!.request.text).toBe(`for ${i}`);
      expect(run!.session).toMatchObject({ chatId: session.chatId, userId: session.userId });
      expect(run!.session?.threadId).toBe(session.threadId);
      expect(run!.destination).toEqual({ platform: 'telegram', chatId: session.chatId, ...(session.threadId === undefined ? {} : { threadId: session.threadId }) });
    });
    expect(warnings()).toEqual([]);
    expect(clock.pending).toBe(0);
  });

  it('moves the timer earlier when a sooner job is added', async () => {
    const { call, clock, deliverer } = await started();
    await call('remind', { delay: '1h', text: 'later' });
    await call('remind', { delay: '1m', text: 'sooner' });
    await clock.advance(MINUTE);
    expect(deliverer.delivered.map((run) => [run.request.text, run.at])).toEqual([['sooner', START + MINUTE]]);
    await clock.advance(HOUR);
    expect(deliverer.delivered.map((run) => run.request.text)).toEqual(['sooner', 'later']);
  });

  it('a removed job does not run', async () => {
    const { call, clock, deliverer, warnings } = await started();
    const id = idIn(await call('remind', { delay: '1m', text: 'never' }));
    await call('remove_schedule', { id });
    await clock.advance(HOUR);
    expect(deliverer.attempts).toBe(0);
    expect(warnings()).toEqual([]);
  });
});

describe('cron jobs', () => {
  it('run at each occurrence, each under its own delivery id', async () => {
    const { call, clock, deliverer, schedules } = await started();
    const id = idIn(await call('schedule', { cron: '*/5 * * * *', text: 'tick' }));
    await clock.advance(HOUR);
    const times = Array.from({ length: 12 }, (_, k) => START + (k + 1) * 5 * MINUTE);
    expect(deliverer.delivered.map((run) => run.at)).toEqual(times);
    expect(deliverer.delivered.map((run) => run.request.id)).toEqual(times.map((at) => `cron:${id}:${at}`));
    expect(deliverer.delivered.every((run) => run.request.text === 'tick' && run.destination.chatId === ORIGIN.chatId)).toBe(true);
    expect((await schedules.get(id))!.nextAt).toBe(START + HOUR + 5 * MINUTE);
  });

  it('deliver to an explicit target, with the origin session entered', async () => {
    const { call, clock, deliverer } = await started();
    await call('schedule', { cron: '0 * * * *', text: 'report', target: 'slack:C0OPS' });
    await clock.advance(HOUR);
    expect(deliverer.delivered).toHaveLength(1);
    expect(deliverer.delivered[0]!.destination).toEqual({ platform: 'slack', chatId: 'C0OPS' });
    expect(deliverer.delivered[0]!.session).toMatchObject({ platform: 'telegram', chatId: ORIGIN.chatId, threadId: '42' });
  });

  it('after a restart, run once for all the runs missed, then on schedule', async () => {
    const harness = await started();
    const { call, clock, deliverer } = harness;
    const id = idIn(await call('schedule', { cron: '0 * * * *', text: 'hourly' }));
    const reminder = idIn(await call('remind', { delay: '3h', text: 'missed' }));
    await clock.advance(HOUR);
    expect(deliverer.delivered).toHaveLength(1);
    await harness.restart();
    expect(clock.pending).toBe(0);
    // Down from 13:00 to 18:30: the runs of 14:00 … 18:00 were missed.
    await clock.advance(5 * HOUR + 30 * MINUTE);
    expect(deliverer.delivered).toHaveLength(1);
    await harness.scheduler.start();
    expect(deliverer.delivered.map((run) => [run.request.id, run.at])).toEqual([
      [`cron:${id}:${START + HOUR}`, START + HOUR],
      [`cron:${id}:${START + 2 * HOUR}`, START + 6 * HOUR + 30 * MINUTE],
      [`cron:${reminder}:${START + 3 * HOUR}`, START + 6 * HOUR + 30 * MINUTE],
    ]);
    await clock.advance(30 * MINUTE);
    await clock.advance(HOUR);
    expect(deliverer.delivered.slice(3).map((run) => [run.request.id, run.at])).toEqual([
      [`cron:${id}:${START + 7 * HOUR}`, START + 7 * HOUR],
      [`cron:${id}:${START + 8 * HOUR}`, START + 8 * HOUR],
    ]);
  });

  it('run in a new trace whose root span links to the execute_tool span that created the job', async () => {
    const { call, clock, deliverer } = await started();
    await call('schedule', { cron: '0 * * * *', text: 'linked' });
    const creating = tracing.span('execute_tool schedule').spanContext();
    await clock.advance(2 * HOUR);
    const runs = tracing.spans().filter((span) => span.name === 'cron.run');
    expect(runs).toHaveLength(2);
    for (const [i, span] of runs.entries()) {
      expect(span.parentSpanContext).toBeUndefined();
      expect(span.spanContext().traceId).not.toBe(creating.traceId);
      expect(span.links.map((link) => link.context.spanId)).toEqual([creating.spanId]);
      expect(span.links[0]!.context.traceId).toBe(creating.traceId);
      // The delivery happened inside that span.
      expect(deliverer.delivered[i]!.span).toEqual(span.spanContext());
    }
    expect(runs[0]!.spanContext().traceId).not.toBe(runs[1]!.spanContext().traceId);
  });
});

describe('failures', () => {
  it('a run whose home is unset tells its origin instead, and the job goes on', async () => {
    const { call, clock, deliverer, schedules, warnings } = await started();
    const id = idIn(await call('schedule', { cron: '0 * * * *', text: 'to the home channel', target: 'home' }));
    await clock.advance(HOUR);
    const dueAt = START + HOUR;
    expect(deliverer.delivered).toHaveLength(1);
    const [notice] = deliverer.delivered;
    expect(notice!.request.id).toBe(`cron:${id}:${dueAt}:notice`);
    expect(notice!.request.kind).toBe('cron');
    expect(notice!.destination).toEqual(ORIGIN);
    expect(notice!.request.text).toMatch(new RegExp(`^Scheduled job ${id} could not be delivered to home: telegram has no home channel; send /sethome`));
    expect(notice!.request.text).toMatch(/It stays scheduled\. Its text:\nto the home channel$/);
    expect(warnings()).toEqual([expect.objectContaining({ schedule: id, target: 'home', msg: expect.stringMatching(/could not reach its target/) })]);
    expect((await schedules.get(id))!.nextAt).toBe(dueAt + HOUR);
    deliverer.homes.set('telegram', { platform: 'telegram', chatId: 'HOME' });
    await clock.advance(HOUR);
    expect(deliverer.delivered[1]!.request.id).toBe(`cron:${id}:${dueAt + HOUR}`);
    expect(deliverer.delivered[1]!.destination).toEqual({ platform: 'telegram', chatId: 'HOME' });
  });

  it('a reminder whose platform is gone tells its origin, once', async () => {
    const { call, clock, deliverer, schedules, services } = await started();
    const id = idIn(await call('schedule', { delay: '1m', text: 'to slack', target: 'slack:C1' }));
    (services.platforms as Set<string>).delete('slack');
    await clock.advance(HOUR);
    expect(deliverer.delivered.map((run) => run.request.id)).toEqual([`cron:${id}:${START + MINUTE}:notice`]);
    expect(deliverer.delivered[0]!.request.text).toMatch(/^Reminder c[0-9a-z]{5} could not be delivered to slack:C1: No platform "slack"/);
    expect(await schedules.get(id)).toBeUndefined();
  });

  it('a failing store does not end the loop: the run happens once it answers again', async () => {
    const { call, clock, deliverer, schedules, warnings } = await started();
    const id = idIn(await call('schedule', { cron: '0 * * * *', text: 'x' }));
    schedules.failing = true;
    await clock.advance(HOUR);
    expect(deliverer.attempts).toBe(0);
    expect(schedules.refused).toBeGreaterThan(0);
    expect(warnings().map((line) => line.msg)).toEqual([expect.stringMatching(/schedule store failed; retrying in 10s/)]);
    schedules.failing = false;
    await clock.advance(CRON_RETRY_MS);
    expect(deliverer.delivered.map((run) => [run.request.id, run.at])).toEqual([[`cron:${id}:${START + HOUR}`, START + HOUR + CRON_RETRY_MS]]);
    await clock.advance(HOUR);
    expect(deliverer.delivered).toHaveLength(2);
  });

  it('a run whose record could not be advanced is tried again under the same delivery id', async () => {
    const { call, clock, deliverer, schedules } = await started();
    const id = idIn(await call('remind', { delay: '1m', text: 'x' }));
    // Delivered, then the store fails before the run is recorded: as a crash at that point would.
    deliverer.failWith = () => {
      deliverer.failWith = undefined;
      schedules.failing = true;
      return undefined;
    };
    await clock.advance(MINUTE);
    schedules.failing = false;
    await clock.advance(CRON_RETRY_MS);
    expect(deliverer.delivered.map((run) => run.request.id)).toEqual([`cron:${id}:${START + MINUTE}`, `cron:${id}:${START + MINUTE}`]);
    expect(await schedules.get(id)).toBeUndefined();
  });

  it('a delivery refused for now is tried again later, and the others due still run', async () => {
    const { call, clock, deliverer, schedules } = await started();
    const flaky = idIn(await call('remind', { delay: '1m', text: 'flaky' }));
    await call('remind', { delay: '1m', text: 'fine' }, sessionInput({ chatId: 'other' }));
    deliverer.failWith = (request) =>
      request.text === 'flaky' ? new ThreadlineError('TL_STORE_FAILED', 'the outbox could not record it') : undefined;
    await clock.advance(MINUTE);
    expect(deliverer.delivered.map((run) => run.request.text)).toEqual(['fine']);
    expect(await schedules.get(flaky)).toBeDefined();
    deliverer.failWith = undefined;
    await clock.advance(CRON_RETRY_MS);
    expect(deliverer.delivered.map((run) => run.request.text)).toEqual(['fine', 'flaky']);
  });
});

describe('stop', () => {
  it('cancels the timer and waits for the run under way', async () => {
    const { call, clock, deliverer, scheduler } = await started();
    await call('remind', { delay: '1m', text: 'slow' });
    let release!: () => void;
    deliverer.gate = new Promise((resolve) => (release = resolve));
    const entered = new Promise((resolve) => (deliverer.onAttempt = resolve));
    const advanced = clock.advance(MINUTE);
    await entered;
    // What had been delivered at the moment stop() resolved.
    const stopping = scheduler.stop().then(() => deliverer.delivered.length);
    release();
    expect(await stopping).toBe(1);
    await advanced;
    expect(deliverer.delivered).toHaveLength(1);
    expect(clock.pending).toBe(0);
  });
});
