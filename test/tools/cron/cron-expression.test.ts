import { describe, expect, it } from 'vitest';
import { checkTimezone, parseCron } from '../../../src/tools/cron/index.js';
import { expectThreadlineError } from '../../helpers/errors.js';

const MONDAY_NOON = Date.UTC(2026, 0, 5, 12, 0, 0);

describe('parseCron', () => {
  it('computes the next run strictly after a time, in UTC by default', () => {
    const hourly = parseCron('0 * * * *');
    expect(hourly.nextAfter(MONDAY_NOON)).toBe(Date.UTC(2026, 0, 5, 13, 0, 0));
    expect(hourly.nextAfter(MONDAY_NOON - 1)).toBe(MONDAY_NOON);
  });

  it('reads the expression in the given time zone', () => {
    // 09:00 in Berlin is 08:00 UTC in winter.
    expect(parseCron('0 9 * * *', 'Europe/Berlin').nextAfter(MONDAY_NOON)).toBe(Date.UTC(2026, 0, 6, 8, 0, 0));
  });

  it('takes six fields, the first being seconds, when they run once a minute', () => {
    expect(parseCron('30 * * * * *').nextAfter(MONDAY_NOON)).toBe(MONDAY_NOON + 30_000);
  });

  it.each([
    ['bad', /five, six, or seven/],
    ['61 * * * *', /Invalid value for minute: 61/],
    ['* * * * * * *', /5 or 6 parts/],
  ])('refuses %j with croner’s reason', (expression, reason) => {
    const error = expectThreadlineError(() => parseCron(expression), 'TL_TOOL_INPUT');
    expect(error.message).toMatch(/is not a cron expression/);
    expect(error.message).toMatch(reason);
  });

  it.each(['* * * * * *', '*/30 * * * * *', '0,1 0 0 1 1 *'])('refuses %j as running more than once a minute', (expression) => {
    const error = expectThreadlineError(() => parseCron(expression), 'TL_TOOL_INPUT');
    expect(error.message).toMatch(/more than once a minute/);
  });

  it('refuses a date, which croner would take as a one-off', () => {
    expect(expectThreadlineError(() => parseCron('2026-03-01T10:00:00'), 'TL_TOOL_INPUT').message).toMatch(/use a delay/);
  });

  it('says an expression that never fires again has no next run', () => {
    expect(parseCron('0 0 30 2 *').nextAfter(MONDAY_NOON)).toBeUndefined();
  });
});

describe('checkTimezone', () => {
  it('returns the zone as the runtime spells it', () => {
    expect(checkTimezone('europe/berlin')).toBe('Europe/Berlin');
    expect(checkTimezone('UTC')).toBe('UTC');
  });

  it('refuses a zone the runtime does not know', () => {
    expect(expectThreadlineError(() => checkTimezone('Mars/Olympus_Mons'), 'TL_TOOL_INPUT').message).toMatch(/not an IANA time zone/);
  });
});
