import type { ScheduleRecord } from '../../store/store.js';
import type { BackgroundWork } from '../tool-services.js';

/**
 * What runs the stored reminders and cron jobs when they fall due: a Clock timer in one
 * gateway (CronScheduler), BullMQ job schedulers when several share Redis. The store's
 * ScheduleRecord stays the truth either way; the tools tell the runner what they changed in it.
 */
export interface ScheduleRunner extends BackgroundWork {
  /** `record` was just stored: its runs are to happen. Throws when they could not be arranged. */
  added(record: ScheduleRecord): Promise<void>;
  /** `record` was just removed from the store: no run of it is to happen. Never throws. */
  removed(record: ScheduleRecord): Promise<void>;
}
