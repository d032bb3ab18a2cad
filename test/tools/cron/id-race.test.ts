// Two jobs added at once that draw the same new id: the second draws another instead of failing.
import { describe, expect, it, vi } from 'vitest';
import { useGlobalTracing } from '../../helpers/tracing.js';
import { idIn, useCronHarness } from './cron-harness.js';

const drawn = vi.hoisted(() => ({ ids: [] as string[] }));
vi.mock('../../../src/tools/cron/schedule-id.js', async (original) => ({
  ...(await original<typeof import('../../../src/tools/cron/schedule-id.js')>()),
  newScheduleId: () => drawn.ids.shift() ?? 'czzzzz',
}));

useGlobalTracing();
const cronHarness = useCronHarness();

describe('schedule ids', () => {
  it('two calls that check the same free id at once both get a job, under different ids', async () => {
    const { call, schedules } = await cronHarness();
    // Both calls find caaaaa free before either inserts it; the loser draws again.
    drawn.ids = ['caaaaa', 'caaaaa', 'cbbbbb'];
    const [first, second] = await Promise.all([call('remind', { delay: '1m', text: 'one' }), call('remind', { delay: '1m', text: 'two' })]);
    const ids = [idIn(first!), idIn(second!)];
    expect(new Set(ids)).toEqual(new Set(['caaaaa', 'cbbbbb']));
    expect((await schedules.get('caaaaa'))?.text).toBe('one');
    expect((await schedules.get('cbbbbb'))?.text).toBe('two');
  });
});
