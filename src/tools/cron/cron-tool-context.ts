import type { TargetResolver } from '../../deliveries/target-resolver.js';
import type { CronConfig } from '../tools-config.js';
import type { ToolServices } from '../tool-services.js';
import type { ScheduleRunner } from './schedule-runner.js';

/** What the cron tools share: the gateway's services, the caps, the runner they tell of their changes and the targets' rules. */
export interface CronToolContext {
  readonly services: ToolServices;
  readonly config: CronConfig;
  readonly scheduler: ScheduleRunner;
  /** Checks a job's target when it is made; each run resolves it again through the router. */
  readonly targets: TargetResolver;
}
