import { describe, expect, it } from 'vitest';
import { ThreadlineError } from '../../../src/errors.js';
import { withSession } from '../../../src/session/index.js';
import { MAX_JOB_TEXT_CHARS, createScheduler, type ScheduleRunner } from '../../../src/tools/cron/index.js';
import { executeTool } from '../../../src/tools/execute-tool.js';
import { assertThreadlineError, rejectionOf } from '../../helpers/errors.js';
import { FULL_SESSION, sessionInput } from '../../helpers/sessions.js';
import { START, idIn, useCronHarness } from './cron-harness.js';

const cronHarness = useCronHarness();

const TOPIC_7 = sessionInput({ threadId: '7' });
const OTHER_CHAT = sessionInput({ chatId: '-1009999' });

describe('creating jobs', () => {
  it('answers a reminder with its id and its run time in ISO UTC', async () => {
    const { call } = await cronHarness();
    const answer = await call('remind', { delay: '10m', text: 'tea' });
    expect(answer.text).toMatch(/^Reminder c[0-9a-z]{5} set for 2026-01-05T12:10:00\.000Z/);
  });

  it('answers a cron job with its id and next run, read in its time zone', async () => {
    const { call, schedules } = await cronHarness();
    const answer = await call('schedule', { cron: '0 9 * * 1-5', text: 'stand-up', timezone: 'Europe/Berlin' });
    expect(answer.text).toContain('next run 2026-01-06T08:00:00.000Z');
    const job = await schedules.get(idIn(answer));
    expect(job).toMatchObject({ cron: '0 9 * * 1-5', timezone: 'Europe/Berlin', target: 'origin', text: 'stand-up' });
    expect(job!.destination).toEqual({ platform: 'telegram', chatId: FULL_SESSION.chatId, threadId: '42' });
  });

  it('records the origin of the execute_tool call: its session and span', async () => {
    const { call, schedules } = await cronHarness();
    const job = await schedules.get(idIn(await call('remind', { delay: '1h', text: 'x' })));
    expect(job!.origin.session).toMatchObject({ platform: 'telegram', chatId: FULL_SESSION.chatId, threadId: '42', userId: 'u-7' });
    expect(job!.nextAt).toBe(START + 3_600_000);
  });

  it('gives ids that differ', async () => {
    const { call } = await cronHarness();
    const ids = new Set<string>();
    for (let i = 0; i < 50; i++) ids.add(idIn(await call('remind', { delay: '1h', text: `r${i}` })));
    expect(ids.size).toBe(50);
  });

  it.each([
    [{ cron: 'bad', text: 'x' }, /not a cron expression.*five, six, or seven/],
    [{ cron: '61 * * * *', text: 'x' }, /minute: 61/],
    [{ cron: '* * * * * *', text: 'x' }, /more than once a minute/],
    [{ cron: '0 0 30 2 *', text: 'x' }, /never runs again/],
    [{ cron: '0 9 * * *', text: 'x', timezone: 'Mars/Olympus_Mons' }, /not an IANA time zone/],
    [{ delay: '5 minutes', text: 'x' }, /not a delay.*90s, 10m/],
    [{ delay: '400d', text: 'x' }, /out of range/],
    [{ delay: '1h', text: 'x', timezone: 'UTC' }, /timezone goes with cron/],
    [{ cron: '0 * * * *', delay: '1h', text: 'x' }, /exactly one of cron/],
    [{ text: 'x' }, /exactly one of cron/],
    [{ delay: '1h', text: '   ' }, /empty/],
    [{ delay: '1h', text: 'x', color: 'red' }, /schedule: /],
  ])('refuses schedule %j with TL_TOOL_INPUT saying why', async (args, reason) => {
    const { call, schedules } = await cronHarness();
    const error = assertThreadlineError(await rejectionOf(call('schedule', args)), 'TL_TOOL_INPUT');
    expect(error.message).toMatch(reason);
    expect(await schedules.ofDestination({ platform: 'telegram', chatId: FULL_SESSION.chatId, threadId: '42' })).toEqual([]);
  });

  it('refuses a text over the limit', async () => {
    const { call } = await cronHarness();
    const error = assertThreadlineError(await rejectionOf(call('remind', { delay: '1h', text: 'x'.repeat(MAX_JOB_TEXT_CHARS + 1) })), 'TL_TOOL_INPUT');
    expect(error.message).toMatch(/4000/);
  });

  it.each([
    ['nonsense', /not origin, home\[:platform\] or platform:chat/],
    ['irc:#ops', /No platform "irc" is enabled.*telegram, slack, webhook/],
    ['home:irc', /No platform "irc" is enabled/],
  ])('refuses target %j with TL_TARGET_INVALID', async (target, reason) => {
    const { call } = await cronHarness();
    const error = assertThreadlineError(await rejectionOf(call('schedule', { cron: '0 * * * *', text: 'x', target })), 'TL_TARGET_INVALID');
    expect(error.message).toMatch(reason);
  });

  it('checks every new job as a delivery to its target would be: origin and home included', async () => {
    const { call, schedules } = await cronHarness({ platforms: ['webhook'] });
    for (const made of [call('remind', { delay: '1h', text: 'x' }), call('schedule', { delay: '1h', text: 'x', target: 'home' })]) {
      const error = assertThreadlineError(await rejectionOf(made), 'TL_TARGET_INVALID');
      expect(error.message).toBe('No platform "telegram" is enabled in this gateway (enabled: webhook)');
    }
    expect(await schedules.ofDestination({ platform: 'telegram', chatId: FULL_SESSION.chatId, threadId: '42' })).toEqual([]);
  });

  it('keeps an explicit target in the one spelling of a destination', async () => {
    const { call, schedules } = await cronHarness();
    const answer = await call('schedule', { delay: '1h', text: 'x', target: 'slack:C1:1700000000.000100' });
    expect((await schedules.get(idIn(answer)))!.target).toBe('slack:C1:1700000000.000100');
  });
});

describe('caps', () => {
  it("refuses a user's reminder past its chat's cap, across the chat's threads; another chat still may, and an admin's job is not capped per chat", async () => {
    const { call } = await cronHarness({ maxPerChat: 2 });
    await call('remind', { delay: '1h', text: 'a' });
    await call('remind', { delay: '1h', text: 'b' }, TOPIC_7);
    // One user in many threads of a chat fills the chat's cap, not one cap a thread.
    const error = assertThreadlineError(await rejectionOf(call('remind', { delay: '1h', text: 'c' }, sessionInput({ threadId: '8' }))), 'TL_TOOL_LIMIT');
    expect(error.message).toMatch(/This chat has 2 scheduled jobs.*THREADLINE_CRON_MAX_PER_CHAT=2/);
    // Told what it can do itself, not the admin-only /cron rm.
    expect(error.message).not.toMatch(/cron rm|remove_schedule/);
    await expect(call('remind', { delay: '1h', text: 'c' }, OTHER_CHAT)).resolves.toBeDefined();
    await expect(call('schedule', { cron: '0 * * * *', text: 'admin job' })).resolves.toBeDefined();
  });

  it("refuses a user's reminder past the user's own cap, across chats", async () => {
    const { call } = await cronHarness({ maxPerUser: 2 });
    await call('remind', { delay: '1h', text: 'a' });
    await call('remind', { delay: '1h', text: 'b' }, OTHER_CHAT);
    const error = assertThreadlineError(await rejectionOf(call('remind', { delay: '1h', text: 'c' }, sessionInput({ chatId: '-1008888' }))), 'TL_TOOL_LIMIT');
    expect(error.message).toMatch(/You have 2 reminders.*THREADLINE_CRON_MAX_PER_USER=2/);
    // Another user of the same chat still may.
    await expect(call('remind', { delay: '1h', text: 'd' }, sessionInput({ userId: 'u-8' }))).resolves.toBeDefined();
  });

  it("keeps the admins' reserve: users' reminders fill the gateway up to it, an admin's job still fits", async () => {
    const { call } = await cronHarness({ maxTotal: 3, adminReserve: 1 });
    await call('remind', { delay: '1h', text: 'a' }, sessionInput({ chatId: '-1', userId: 'x' }));
    await call('remind', { delay: '1h', text: 'b' }, sessionInput({ chatId: '-2', userId: 'y' }));
    const error = assertThreadlineError(await rejectionOf(call('remind', { delay: '1h', text: 'c' }, sessionInput({ chatId: '-3', userId: 'z' }))), 'TL_TOOL_LIMIT');
    expect(error.message).toMatch(/gateway has 2 scheduled jobs.*admins' reserve/);
    await expect(call('schedule', { cron: '0 * * * *', text: 'admin job' })).resolves.toBeDefined();
    const full = assertThreadlineError(await rejectionOf(call('schedule', { cron: '0 * * * *', text: 'one more' })), 'TL_TOOL_LIMIT');
    expect(full.message).toMatch(/gateway has 3 scheduled jobs.*THREADLINE_CRON_MAX_TOTAL=3/);
  });
});

describe('listing and removing', () => {
  it("lists the active chat and thread's jobs only, soonest first", async () => {
    const { call } = await cronHarness();
    const later = idIn(await call('schedule', { cron: '0 9 * * *', text: 'daily\nreport', timezone: 'Europe/Berlin', target: 'home' }));
    const sooner = idIn(await call('remind', { delay: '10m', text: 'tea' }));
    await call('remind', { delay: '1m', text: 'elsewhere' }, TOPIC_7);
    const listing = (await call('list_schedules', {})).text.split('\n');
    expect(listing).toEqual([
      `${sooner} next 2026-01-05T12:10:00.000Z, once, to origin: tea`,
      `${later} next 2026-01-06T08:00:00.000Z, cron "0 9 * * *" (Europe/Berlin), to home: daily report`,
    ]);
    expect((await call('list_schedules', {}, OTHER_CHAT)).text).toBe('No reminders or cron jobs in this chat.');
  });

  it("removes a job of the active chat and thread only; another chat's is not found", async () => {
    const { call, schedules } = await cronHarness();
    const id = idIn(await call('schedule', { cron: '0 * * * *', text: 'x' }));
    for (const stranger of [OTHER_CHAT, TOPIC_7]) {
      const error = assertThreadlineError(await rejectionOf(call('remove_schedule', { id }, stranger)), 'TL_TOOL_INPUT');
      expect(error.message).toBe(`No job "${id}" in this chat; list_schedules shows this chat's jobs`);
    }
    expect(await schedules.get(id)).toBeDefined();
    expect((await call('remove_schedule', { id })).text).toBe(`Removed cron job ${id}.`);
    expect(await schedules.get(id)).toBeUndefined();
    assertThreadlineError(await rejectionOf(call('remove_schedule', { id })), 'TL_TOOL_INPUT');
  });

  it('tells the runner of each job added and removed; a job it cannot schedule is taken out again and the call fails', async () => {
    const harness = await cronHarness({ maxPerChat: 1 });
    const told: string[] = [];
    let refuse = false;
    const runner: ScheduleRunner = {
      start: async () => {},
      stop: async () => {},
      added: async (record) => {
        if (refuse) throw new ThreadlineError('TL_REDIS_UNAVAILABLE', 'Redis failed a command');
        told.push(`added ${record.id} ${record.nextAt}`);
      },
      removed: async (record) => {
        told.push(`removed ${record.id}`);
      },
    };
    harness.tools = new Map(createScheduler(harness.services, harness.config, () => runner).tools.map((tool) => [tool.name, tool]));
    const id = idIn(await harness.call('remind', { delay: '1m', text: 'x' }));
    await harness.call('remove_schedule', { id });
    expect(told).toEqual([`added ${id} ${START + 60_000}`, `removed ${id}`]);
    refuse = true;
    assertThreadlineError(await rejectionOf(harness.call('schedule', { cron: '0 * * * *', text: 'y' })), 'TL_REDIS_UNAVAILABLE');
    expect((await harness.call('list_schedules', {})).text).toBe('No reminders or cron jobs in this chat.');
    // Not counted against the cap of one either.
    refuse = false;
    await expect(harness.call('remind', { delay: '1m', text: 'z' })).resolves.toBeDefined();
  });

  it('keeps the job of a replayed call when the runner then fails: the call it replays stored it, and said so', async () => {
    const harness = await cronHarness();
    let refuse = false;
    const runner: ScheduleRunner = {
      start: async () => {},
      stop: async () => {},
      added: async () => {
        if (refuse) throw new ThreadlineError('TL_REDIS_UNAVAILABLE', 'Redis failed a command');
      },
      removed: async () => {},
    };
    harness.tools = new Map(createScheduler(harness.services, harness.config, () => runner).tools.map((tool) => [tool.name, tool]));
    // The same tool call of a turn run again after a restart: the same idempotency key.
    const remind = () =>
      withSession(FULL_SESSION, () =>
        executeTool(harness.tools.get('remind')!, { delay: '10m', text: 'stand up' }, { signal: new AbortController().signal, authorize: async () => true, idempotencyKey: 'turn-1:0' }),
      );
    const id = idIn(await remind());
    refuse = true;
    assertThreadlineError(await rejectionOf(remind()), 'TL_REDIS_UNAVAILABLE');
    expect(await harness.schedules.get(id)).toMatchObject({ id, text: 'stand up', nextAt: START + 10 * 60_000 });
  });

  it('marks schedule and remove_schedule for admins, remind and list_schedules for everyone', async () => {
    const { tools } = await cronHarness();
    expect(Object.fromEntries([...tools.values()].map((tool) => [tool.name, tool.adminOnly]))).toEqual({
      remind: false,
      schedule: true,
      list_schedules: false,
      remove_schedule: true,
    });
  });
});
