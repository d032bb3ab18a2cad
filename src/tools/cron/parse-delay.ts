import { ThreadlineError } from '../../errors.js';

const UNIT_MS = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** The shortest delay: a reminder for "now" is an answer, not a job. */
export const MIN_DELAY_MS = UNIT_MS.s;
/** The longest delay: a year, so a forgotten reminder does not sit in the store for ever. */
export const MAX_DELAY_MS = 365 * UNIT_MS.d;

const FORM = 'a delay is a number with s, m, h or d (90s, 10m, 2h, 1d, 1h30m) or plain seconds (90), from 1s to 365d';

/**
 * Reads a delay such as `90s`, `10m`, `2h`, `1d`, `1h30m`, or `90` (seconds) into
 * milliseconds. Throws TL_TOOL_INPUT naming the accepted form when it is not one, or is
 * outside 1 s … 365 d.
 */
export function parseDelay(text: string): number {
  const trimmed = text.trim().toLowerCase();
  let ms: number;
  if (/^\d{1,12}$/.test(trimmed)) {
    ms = Number(trimmed) * UNIT_MS.s;
  } else if (/^(\d{1,12}\s*[smhd]\s*)+$/.test(trimmed)) {
    ms = 0;
    for (const [, amount, unit] of trimmed.matchAll(/(\d+)\s*([smhd])/g)) ms += Number(amount) * UNIT_MS[unit as keyof typeof UNIT_MS];
  } else {
    throw new ThreadlineError('TL_TOOL_INPUT', `"${text.slice(0, 40)}" is not a delay: ${FORM}`);
  }
  if (ms < MIN_DELAY_MS || ms > MAX_DELAY_MS) {
    throw new ThreadlineError('TL_TOOL_INPUT', `A delay of "${text.slice(0, 40)}" is out of range: ${FORM}`);
  }
  return ms;
}
