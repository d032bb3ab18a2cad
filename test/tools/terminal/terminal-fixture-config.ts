import type { SessionInput } from '../../../src/session/index.js';
import type { TerminalConfig } from '../../../src/tools/tools-config.js';

export const TEST_CONFIG: TerminalConfig = {
  enabled: true,
  timeoutMs: 20_000,
  tailChars: 200,
  outputMaxBytes: 64 * 1024,
  minCheckIntervalMs: 30_000,
  maxPerChat: 3,
  maxTotal: 5,
  passedEnv: [],
};

/** A Telegram forum topic: the chat and thread a command is started from. */
export const ORIGIN_SESSION: SessionInput = { platform: 'telegram', chatType: 'group', chatId: '-100777', threadId: '42', userId: 'u-1' };
/** Another chat of the same gateway. */
export const OTHER_SESSION: SessionInput = { platform: 'slack', chatType: 'channel', chatId: 'C999', userId: 'u-2' };

