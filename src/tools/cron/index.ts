import type { Tool } from '../tool.js';
import type { BackgroundWork, ToolServices } from '../tool-services.js';
import type { CronConfig } from '../tools-config.js';
import { CronScheduler } from './cron-scheduler.js';
import { listSchedulesTool } from './list-schedules-tool.js';
import { remindTool } from './remind-tool.js';
import { removeScheduleTool } from './remove-schedule-tool.js';
import { scheduleTool } from './schedule-tool.js';

export { CronScheduler, CRON_RETRY_MS } from './cron-scheduler.js';
export { parseDelay, MIN_DELAY_MS, MAX_DELAY_MS } from './parse-delay.js';
export { parseCron, checkTimezone, type CronSchedule } from './cron-expression.js';
export { MAX_JOB_TEXT_CHARS } from './job-text.js';

/**
 * Reminders and cron jobs: the tools `remind` (anyone), `schedule` and `remove_schedule`
 * (admins) and `list_schedules`, and the scheduler that runs the jobs, to be started and
 * stopped with the gateway.
 */
export function createScheduler(services: ToolServices, config: CronConfig): { tools: Tool[]; scheduler: BackgroundWork } {
  const scheduler = new CronScheduler(services);
  const context = { services, config, scheduler };
  return {
    tools: [remindTool(context), scheduleTool(context), listSchedulesTool(context), removeScheduleTool(context)],
    scheduler,
  };
}
