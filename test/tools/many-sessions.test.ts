import { describe, expect, it } from 'vitest';
import { runManySessions } from './many-sessions-scenario.js';

const SESSIONS = 1_000;

describe('1,000 concurrent sessions with background commands and reminders', () => {
  it('every notification and reminder lands at its own origin chat and thread, with its text, once per key', async () => {
    const result = await runManySessions(SESSIONS);
    expect(result.misplaced).toEqual([]);
    // Nothing else arrived: two acknowledgements, one notification and one reminder a session.
    expect(result.delivered).toBe(4 * SESSIONS);
  }, 300_000);
});
