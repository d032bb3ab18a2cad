import { ROOT_CONTEXT } from '@opentelemetry/api';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import { contextWithSession, createSession, names, withSession } from '../../src/session/index.js';
import { SessionSpanProcessor, createLogger, pseudonymize, readTelemetryConfig, type LoggerOptions } from '../../src/telemetry/index.js';
import { thrownBy } from '../helpers/errors.js';
import { FULL_SESSION } from '../helpers/sessions.js';
import { createTestTracing } from '../helpers/tracing.js';

const KEY = 'a-key-of-at-least-16-bytes';
const HMAC = { privacy: 'hmac', hmacKey: KEY } as const;
const session = createSession(FULL_SESSION);
const tracing = createTestTracing([new SessionSpanProcessor(HMAC)]);
afterAll(() => tracing.provider.shutdown());

/** One record logged inside FULL_SESSION with the fields the gateway logs ids under. */
function record(options: Omit<LoggerOptions, 'destination'>): Record<string, unknown> {
  const lines: string[] = [];
  const logger = createLogger({ ...options, destination: { write: (line: string) => void lines.push(line) } });
  withSession(FULL_SESSION, () =>
    logger.warn(
      {
        destination: `${session.platform}:${encodeURIComponent(session.chatId)}:${session.threadId}`,
        chat: session.chatId,
        routing: { 'routing.origin.platform': 'telegram', 'routing.origin.chat.id': session.chatId, 'routing.destination.chat.thread.id': '' },
      },
      'logged',
    ),
  );
  return JSON.parse(lines[0]!) as Record<string, unknown>;
}

describe('log privacy follows span privacy', () => {
  it('hmac: the same pseudonyms as the spans, for chat, thread, session and user', () => {
    tracing.tracer.startSpan('stamped', {}, contextWithSession(ROOT_CONTEXT, FULL_SESSION)).end();
    const span = tracing.span('stamped').attributes;
    const logged = record({ privacy: HMAC });
    expect(logged).toMatchObject({
      [names.CHAT_PLATFORM]: 'telegram',
      [names.CHAT_ID]: span[names.CHAT_ID],
      [names.CHAT_THREAD_ID]: span[names.CHAT_THREAD_ID],
      [names.SESSION_ID]: span[names.SESSION_ID],
      [names.USER_ID]: span[names.USER_ID],
      destination: `telegram:${String(span[names.CHAT_ID])}:${String(span[names.CHAT_THREAD_ID])}`,
      chat: span[names.CHAT_ID],
      routing: { 'routing.origin.platform': 'telegram', 'routing.origin.chat.id': span[names.CHAT_ID], 'routing.destination.chat.thread.id': '' },
    });
    expect(span[names.USER_ID]).toBe(pseudonymize(session.userId!, KEY));
    const text = JSON.stringify(logged);
    for (const id of [session.chatId, session.sessionId, session.userId!]) expect(text).not.toContain(id);
  });

  it('off: no ids at all, as on spans', () => {
    const logged = record({ privacy: { privacy: 'off' } });
    expect(logged).toMatchObject({ [names.CHAT_PLATFORM]: 'telegram', [names.CHAT_TYPE]: 'group', destination: 'telegram' });
    for (const key of [names.CHAT_ID, names.CHAT_THREAD_ID, names.SESSION_ID, names.USER_ID, 'chat']) expect(logged).not.toHaveProperty(key);
    expect(JSON.stringify(logged)).not.toContain(session.chatId);
  });

  it('plain: ids as they are', () => {
    expect(record({ privacy: { privacy: 'plain' } })).toMatchObject({ [names.CHAT_ID]: session.chatId, chat: session.chatId, destination: 'telegram:-1001234:42' });
  });

  describe('from the environment by default', () => {
    const saved = { ...process.env };
    afterEach(() => {
      process.env = { ...saved };
    });

    it('reads THREADLINE_SPAN_PRIVACY and THREADLINE_SPAN_HMAC_KEY, the setting spans use', () => {
      process.env['THREADLINE_SPAN_PRIVACY'] = 'hmac';
      process.env['THREADLINE_SPAN_HMAC_KEY'] = KEY;
      expect(record({})[names.CHAT_ID]).toBe(pseudonymize(session.chatId, KEY));
    });
  });

  it('refuses names in the log outside plain mode: a name would undo the pseudonyms', () => {
    expect(thrownBy(() => createLogger({ includeNames: true, privacy: HMAC }))).toBeInstanceOf(ConfigError);
    const error = thrownBy(() => readTelemetryConfig({ THREADLINE_SPAN_PRIVACY: 'hmac', THREADLINE_SPAN_HMAC_KEY: KEY, THREADLINE_LOG_NAMES: '1' }));
    expect((error as ConfigError).variable).toBe('THREADLINE_LOG_NAMES');
  });
});
