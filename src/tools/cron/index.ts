import { TargetResolver } from '../../deliveries/target-resolver.js';
import { ThreadlineError } from '../../errors.js';
import { addJob } from './add-job.js';
import { checkJobText } from './job-text.js';
import { MAX_DELAY_MS, MIN_DELAY_MS } from './parse-delay.js';
import type { Tool } from '../tool.js';
import type { ToolServices } from '../tool-services.js';
import type { CronConfig } from '../tools-config.js';
import { CronScheduler } from './cron-scheduler.js';
import { listSchedulesTool } from './list-schedules-tool.js';
import { remindTool } from './remind-tool.js';
import { removeScheduleTool } from './remove-schedule-tool.js';
import type { ScheduleRunner } from './schedule-runner.js';
import { scheduleTool } from './schedule-tool.js';

export { CronScheduler } from './cron-scheduler.js';
export { CRON_RETRY_MS, runSchedule, type ParseCron } from './run-schedule.js';
export type { ScheduleRunner } from './schedule-runner.js';
export { parseDelay, MIN_DELAY_MS, MAX_DELAY_MS } from './parse-delay.js';
export { parseCron, checkTimezone, type CronSchedule } from './cron-expression.js';
export { MAX_JOB_TEXT_CHARS } from './job-text.js';

/** Makes the runner of a gateway's schedules from its tools' services. */
export type ScheduleRunnerFactory = (services: ToolServices) => ScheduleRunner;

/**
 * Reminders and cron jobs: the tools `remind` (anyone), `schedule` and `remove_schedule`
 * (admins) and `list_schedules`, and the runner of the jobs, to be started and stopped with
 * the gateway: `runner`'s (BullMQ with several instances on Redis), else the Clock's.
 */
export function createScheduler(
  services: ToolServices,
  config: CronConfig,
  runner: ScheduleRunnerFactory = (shared) => new CronScheduler(shared),
): { tools: Tool[]; scheduler: ScheduleRunner; later: Later } {
  const scheduler = runner(services);
  const context = { services, config, scheduler, targets: new TargetResolver(services.store.homes, services.platforms) };
  return {
    tools: [remindTool(context), scheduleTool(context), listSchedulesTool(context), removeScheduleTool(context)],
    scheduler,
    // What remind does, for any tool: one message to the origin after a delay.
    later: async (text, delayMs, callKey) => {
      const job = await addJob(context, { text: checkJobText(text), target: { to: 'origin' }, by: 'user', nextAt: services.clock.now() + checkDelayMs(delayMs) }, callKey);
      return { id: job.id, at: job.nextAt };
    },
  };
}

/** Schedules one message to the active context's chat and thread (ToolCall.later), once per call key. */
export type Later = (text: string, delayMs: number, callKey: string | undefined) => Promise<{ readonly id: string; readonly at: number }>;

function checkDelayMs(delayMs: number): number {
  if (!Number.isFinite(delayMs) || delayMs < MIN_DELAY_MS || delayMs > MAX_DELAY_MS) {
    throw new ThreadlineError('TL_TOOL_INPUT', `later() takes a delay from ${MIN_DELAY_MS} ms to ${MAX_DELAY_MS} ms; ${String(delayMs)} is not`);
  }
  return delayMs;
}
