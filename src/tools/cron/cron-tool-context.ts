import type { CronConfig } from '../tools-config.js';
import type { ToolServices } from '../tool-services.js';
import type { ScheduleRunner } from './schedule-runner.js';

/** What the cron tools share: the gateway's services, the caps and the runner they tell of their changes. */
export interface CronToolContext {
  readonly services: ToolServices;
  readonly config: CronConfig;
  readonly scheduler: ScheduleRunner;
}
