import { ThreadlineError } from '../../../src/errors.js';
import type { ScheduleTable } from '../../../src/store/store.js';

/**
 * A schedule table that throws TL_STORE_FAILED from every call while `failing` is set;
 * `inner` is swapped when the store is reopened.
 */
export class FlakyScheduleTable implements ScheduleTable {
  failing = false;
  /** Calls refused so far. */
  refused = 0;

  constructor(public inner: ScheduleTable) {}

  add: ScheduleTable['add'] = (...args) => this.call(() => this.inner.add(...args));
  due: ScheduleTable['due'] = (...args) => this.call(() => this.inner.due(...args));
  overdue: ScheduleTable['overdue'] = (...args) => this.call(() => this.inner.overdue(...args));
  nextAt: ScheduleTable['nextAt'] = () => this.call(() => this.inner.nextAt());
  all: ScheduleTable['all'] = () => this.call(() => this.inner.all());
  ofDestination: ScheduleTable['ofDestination'] = (...args) => this.call(() => this.inner.ofDestination(...args));
  get: ScheduleTable['get'] = (...args) => this.call(() => this.inner.get(...args));
  advance: ScheduleTable['advance'] = (...args) => this.call(() => this.inner.advance(...args));
  remove: ScheduleTable['remove'] = (...args) => this.call(() => this.inner.remove(...args));

  private async call<T>(fn: () => Promise<T>): Promise<T> {
    if (this.failing) {
      this.refused++;
      throw new ThreadlineError('TL_STORE_FAILED', 'the test store is failing');
    }
    return fn();
  }
}
