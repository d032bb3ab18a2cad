import type { CronConfig } from '../tools-config.js';
import type { ToolServices } from '../tool-services.js';
import type { CronScheduler } from './cron-scheduler.js';

/** What the cron tools share: the gateway's services, the caps and the scheduler to wake. */
export interface CronToolContext {
  readonly services: ToolServices;
  readonly config: CronConfig;
  readonly scheduler: CronScheduler;
}
