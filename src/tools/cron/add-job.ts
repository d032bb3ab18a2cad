import { destinationOf } from '../../session/routing-mismatch.js';
import { ThreadlineError } from '../../errors.js';
import { formatTarget, type Target } from '../../session/target.js';
import { captureRouting, requireSession } from '../../session/index.js';
import type { ScheduleRecord, ScheduleTable } from '../../store/store.js';
import type { Session } from '../../session/index.js';
import type { CronConfig } from '../tools-config.js';
import { shortIdOf, turnCallResults } from '../call-key.js';
import type { CronToolContext } from './cron-tool-context.js';
import { newScheduleId } from './schedule-id.js';

/** Fresh ids tried before giving up: with 60 million ids, a second try is already rare. */
const ID_ATTEMPTS = 8;

/** What a tool asks to schedule; the origin comes from the active context. */
export interface JobSpec {
  readonly text: string;
  /** Checked here by the TargetResolver, and stored in formatTarget's spelling. */
  readonly target: Target;
  readonly cron?: string | undefined;
  /** Undefined: UTC. */
  readonly timezone?: string | undefined;
  readonly nextAt: number;
  /**
   * `admin`: asked for through an admin-only tool (`schedule`, `/cron`): counted against the
   * gateway's whole cap only. `user` (`remind`, ToolCall.later): also against its chat's and
   * its sender's caps, and never into the admins' reserve.
   */
  readonly by: 'admin' | 'user';
}

/** What a caller of addJob tells its user: the job's id, its first run and its target. */
export type AddedJob = Pick<ScheduleRecord, 'id' | 'nextAt' | 'target' | 'cron' | 'timezone'>;

/**
 * Stores a job whose origin is the active context (storeJob) once its target passes the
 * TargetResolver's check for later deliveries, then has the runner arrange its
 * runs. When the runner cannot, a job this call stored is taken out of the store again and the
 * call fails: a stored job that never runs would still be listed and counted against the caps.
 */
export async function addJob(context: CronToolContext, spec: JobSpec, callKey?: string): Promise<AddedJob> {
  // A replayed turn whose first run added this job says so even once the job has run and is gone:
  // adding it again would deliver it twice, under a new due time no outbox key could match.
  const turn = callKey === undefined ? undefined : turnCallResults();
  const marker = `${callKey}#job`;
  const added = await turn?.results.get(turn.messageId, marker);
  if (added !== undefined) return JSON.parse(added) as AddedJob;
  const { record, created } = await storeJob(context, spec, callKey);
  try {
    await context.scheduler.added(record);
    await turn?.results.record(turn.messageId, marker, JSON.stringify({ id: record.id, nextAt: record.nextAt, target: record.target, cron: record.cron, timezone: record.timezone } satisfies AddedJob));
  } catch (error) {
    // A replayed call's job was stored, and confirmed, by the call it replays: it stays, for the next reconcile.
    if (created) {
      await context.services.store.schedules.remove(record.id).catch((cleanup: unknown) => {
        context.services.logger.warn({ schedule: record.id, err: cleanup }, 'a job that could not be scheduled stays stored; the next reconcile schedules it');
      });
    }
    throw error;
  }
  return record;
}

/**
 * Stores a job whose origin is the active context: its routing captured in the execute_tool
 * span (each run's link) and its chat and thread (the per-chat cap, list and remove). Throws
 * TL_TOOL_LIMIT when the chat or the gateway has as many jobs as its cap allows. `created` is
 * false when a replayed call finds the job its first run stored.
 */
async function storeJob(context: CronToolContext, spec: JobSpec, callKey?: string): Promise<{ record: ScheduleRecord; created: boolean }> {
  const { services, config } = context;
  const origin = captureRouting();
  const destination = destinationOf(requireSession());
  const target = formatTarget(context.targets.check(spec.target, origin));
  const { schedules } = services.store;
  const keyed = callKey === undefined ? undefined : shortIdOf('c', callKey);
  if (keyed !== undefined) {
    const existing = await schedules.get(keyed);
    // This call ran before its turn was cut short: the job was stored then, not again now.
    if (existing !== undefined && existing.text === spec.text && existing.origin.session.sessionId === origin.session.sessionId) {
      return { record: existing, created: false };
    }
  }
  if (spec.by === 'user') await checkOwnCaps(schedules, origin.session, config);
  // Per chat and per user were checked above; the store checks the total in the insert's transaction.
  const caps = { maxPerDestination: config.maxTotal, maxTotal: spec.by === 'admin' ? config.maxTotal : config.maxTotal - config.adminReserve };
  for (let attempt = 0; attempt < ID_ATTEMPTS; attempt++) {
    const id = attempt === 0 && keyed !== undefined ? keyed : newScheduleId();
    if ((await schedules.get(id)) !== undefined) continue;
    const record: ScheduleRecord = {
      id,
      origin,
      destination,
      target,
      text: spec.text,
      ...(spec.cron === undefined ? {} : { cron: spec.cron }),
      ...(spec.timezone === undefined ? {} : { timezone: spec.timezone }),
      nextAt: spec.nextAt,
      createdAt: services.clock.now(),
    };
    const outcome = await schedules.add(record, caps);
    if (outcome.status === 'added') return { record, created: true };
    // Another call took the same new id between the check and the insert: try another.
    if (outcome.status === 'taken') continue;
    throw new ThreadlineError(
      'TL_TOOL_LIMIT',
      spec.by === 'admin'
        ? `The gateway has ${outcome.open} scheduled jobs, its cap (THREADLINE_CRON_MAX_TOTAL=${config.maxTotal}); ${ADMIN_REMEDY}`
        : `The gateway has ${outcome.open} scheduled jobs, all it keeps for reminders (THREADLINE_CRON_MAX_TOTAL=${config.maxTotal} less the admins' reserve); ${USER_REMEDY}`,
    );
  }
  throw new ThreadlineError('TL_TOOL_FAILED', `No free schedule id was found in ${ID_ATTEMPTS} tries; try again`);
}

const ADMIN_REMEDY = 'list_schedules (/cron list) shows a chat\'s jobs and remove_schedule (/cron rm <id>) removes one; `threadline schedules list` shows all';
const USER_REMEDY = 'list_schedules (/cron list) shows this chat\'s; one ends when it has run, or an admin can remove one';

/**
 * A reminder's own caps: its chat's (every thread of it) and its sender's (a sender the platform
 * names no user for counts as its chat), so one user posting in many threads cannot fill the
 * gateway. Counted over all jobs: the table is bounded by THREADLINE_CRON_MAX_TOTAL.
 */
async function checkOwnCaps(schedules: ScheduleTable, session: Session, config: CronConfig): Promise<void> {
  let inChat = 0;
  let ofUser = 0;
  for (const job of await schedules.all()) {
    const other = job.origin.session;
    if (other.platform !== session.platform) continue;
    if (other.chatId === session.chatId) inChat++;
    if (session.userId !== undefined && other.userId === session.userId) ofUser++;
  }
  if (inChat >= config.maxPerChat) {
    throw new ThreadlineError('TL_TOOL_LIMIT', `This chat has ${inChat} scheduled jobs, its cap (THREADLINE_CRON_MAX_PER_CHAT=${config.maxPerChat}); ${USER_REMEDY}`);
  }
  if (ofUser >= config.maxPerUser) {
    throw new ThreadlineError('TL_TOOL_LIMIT', `You have ${ofUser} reminders scheduled, the cap a user has (THREADLINE_CRON_MAX_PER_USER=${config.maxPerUser}); ${USER_REMEDY}`);
  }
}
