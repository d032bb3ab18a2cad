import { describe, expect, it } from 'vitest';
import { MAX_DELAY_MS, parseDelay } from '../../../src/tools/cron/index.js';
import { expectThreadlineError } from '../../helpers/errors.js';

describe('parseDelay', () => {
  it.each([
    ['90s', 90_000],
    ['10m', 600_000],
    ['2h', 7_200_000],
    ['1d', 86_400_000],
    ['1h30m', 5_400_000],
    ['1h 30m', 5_400_000],
    ['90', 90_000],
    [' 2H ', 7_200_000],
    ['1s', 1000],
    ['365d', MAX_DELAY_MS],
  ])('reads %j', (text, ms) => {
    expect(parseDelay(text)).toBe(ms);
  });

  it.each(['soon', '10x', '1.5h', '-5m', 'm', '', '10 minutes'])('refuses %j, naming the form', (text) => {
    const error = expectThreadlineError(() => parseDelay(text), 'TL_TOOL_INPUT');
    expect(error.message).toMatch(/90s, 10m, 2h, 1d/);
  });

  it.each(['0', '0s', '366d', '8761h', '99999999999'])('refuses %j as out of 1s … 365d', (text) => {
    const error = expectThreadlineError(() => parseDelay(text), 'TL_TOOL_INPUT');
    expect(error.message).toMatch(/out of range.*from 1s to 365d/);
  });
});
