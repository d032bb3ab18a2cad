import { describe, expect, it } from 'vitest';
import { createScheduler } from '../../../src/tools/cron/index.js';
import { useGlobalTracing } from '../../helpers/tracing.js';
import { START, idIn, useCronHarness } from './cron-harness.js';

useGlobalTracing();
const MINUTE = 60_000;
const cronHarness = useCronHarness();

// Several instances share one store; a job wakes only the scheduler of the instance whose turn added it.
describe('a scheduler sharing its store with other instances', () => {
  it('runs a job another instance added, though nothing woke it, once that instance is gone', async () => {
    const harness = await cronHarness();
    await harness.scheduler.start();
    const other = createScheduler({ ...harness.services, instance: 'b' }, harness.config).scheduler;
    await other.start();
    const id = idIn(await harness.call('remind', { delay: '10m', text: 'tea is ready' }));
    // The instance that added it stops for good before it is due.
    await harness.scheduler.stop();
    await harness.clock.advance(10 * MINUTE + 5_000);
    expect(harness.deliverer.delivered.map((run) => run.request.id)).toEqual([`cron:${id}:${START + 10 * MINUTE}`]);
    await other.stop();
  });
});
