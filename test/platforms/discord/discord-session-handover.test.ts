import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { DISCORD_SESSION_STREAM, DiscordSessionHandover } from '../../../src/platforms/discord/discord-session-handover.js';
import type { SyncTokens } from '../../../src/store/store.js';

const logger = pino({ level: 'silent' });
const BOT = '1000000000000000001';
const session = (sessionId: string, sequence: number) => ({ sessionId, resumeURL: 'wss://gateway.discord.gg', sequence, shardId: 0, shardCount: 1 });

function memoryTokens(): SyncTokens & { value(): string | undefined } {
  let stored: string | undefined;
  return {
    value: () => stored,
    get: async () => stored,
    advance: async (_stream, previous, token) => {
      if (stored !== previous) return false;
      stored = token;
      return true;
    },
  };
}

describe('DiscordSessionHandover', () => {
  it('keeps the session at the last dispatch taken, and hands it to the next connection', async () => {
    const tokens = memoryTokens();
    const first = new DiscordSessionHandover(tokens, logger);
    await first.load();
    first.taking(BOT, session('a', 7));
    await first.flush();
    expect(await new DiscordSessionHandover(tokens, logger).load()).toEqual({ botId: BOT, sessions: [session('a', 7)] });
  });

  it('never moves the session back once a newer connection kept its own', async () => {
    const tokens = memoryTokens();
    const old = new DiscordSessionHandover(tokens, logger);
    await old.load();
    old.taking(BOT, session('a', 3));
    await old.flush();
    const next = new DiscordSessionHandover(tokens, logger);
    await next.load();
    next.taking(BOT, session('a', 9));
    await next.flush();
    // The old connection, late, writes what it had taken: refused.
    old.taking(BOT, session('a', 4));
    await old.flush();
    expect(JSON.parse(tokens.value()!)).toEqual({ botId: BOT, sessions: [session('a', 9)] });
  });

  it('takes nothing it cannot use: no sessions, a bad resume URL, text that is not JSON', async () => {
    for (const value of ['not json', JSON.stringify({ botId: BOT, sessions: [] }), JSON.stringify({ botId: BOT, sessions: [{ ...session('a', 1), resumeURL: 'http://x' }] })]) {
      const tokens = memoryTokens();
      await tokens.advance(DISCORD_SESSION_STREAM, undefined, value);
      expect(await new DiscordSessionHandover(tokens, logger).load()).toBeUndefined();
    }
  });
});
