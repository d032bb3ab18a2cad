import { describe, expect, it } from 'vitest';
import { SessionFieldError, ThreadlineError } from '../../src/errors.js';
import { MAX_FIELD_LENGTH, SESSION_FIELDS, createSession, deriveSessionId, type SessionInput } from '../../src/session/index.js';
import { isValidatedSession } from '../../src/session/validate-session.js';
import { thrownBy } from '../helpers/errors.js';
import { FULL_SESSION, MINIMAL_SESSION, sessionInput } from '../helpers/sessions.js';

/** Asserts createSession refuses `input` with a SessionFieldError naming `field`. */
function expectRefused(input: unknown, field: string): SessionFieldError {
  const error = thrownBy(() => createSession(input as SessionInput));
  expect(error).toBeInstanceOf(SessionFieldError);
  expect(error).toBeInstanceOf(ThreadlineError);
  const fieldError = error as SessionFieldError;
  expect(fieldError.code).toBe('TL_SESSION_INVALID');
  expect(fieldError.statusCode).toBe(400);
  expect(fieldError.field).toBe(field);
  expect(fieldError.message).toContain(`"${field}"`);
  return fieldError;
}

const TEXT_FIELDS = ['platform', 'chatId', 'chatName', 'threadId', 'userId', 'userName', 'messageId', 'sessionId'] as const;
const ID_FIELDS = TEXT_FIELDS.filter((field) => field !== 'platform');

const UNSAFE = {
  NUL: '\u0000',
  'line feed': '\n',
  tab: '\t',
  DEL: '\u007f',
  'C1 NEL': '\u0085',
  'C1 CSI': '\u009b',
  'line separator': '\u2028',
  'paragraph separator': '\u2029',
  'lone high surrogate': '\ud800',
  'lone low surrogate': '\udfff',
  'surrogates in the wrong order': '\udc00\ud800',
};

describe('createSession: accepted input', () => {
  it('keeps every given field and derives the session id', () => {
    const session = createSession(FULL_SESSION);
    const { platform, chatType, chatId, threadId } = FULL_SESSION;
    // The conversation is the chat and thread; userId keys only per-user sessions.
    expect(session).toEqual({ ...FULL_SESSION, sessionId: deriveSessionId({ platform, chatType, chatId, threadId }) });
    expect(session.sessionId).toMatch(/^tl_[A-Za-z0-9_-]{22}$/);
  });

  it('leaves absent optional fields absent, not undefined', () => {
    const session = createSession(MINIMAL_SESSION);
    expect(Object.keys(session).sort()).toEqual(['chatId', 'chatType', 'platform', 'sessionId']);
  });

  it('returns a frozen copy that later changes to the input do not reach', () => {
    const input = { ...FULL_SESSION } as Record<string, unknown>;
    const session = createSession(input as unknown as SessionInput);
    expect(Object.isFrozen(session)).toBe(true);
    expect(() => {
      (session as { chatId: string }).chatId = 'other';
    }).toThrow(TypeError);
    input['threadId'] = '99';
    expect(session.threadId).toBe(FULL_SESSION.threadId);
  });

  it('keeps an explicit session id', () => {
    expect(createSession(sessionInput({ sessionId: 'conversation-9' })).sessionId).toBe('conversation-9');
  });

  it('accepts ids of exactly the maximum length, counted in UTF-16 units', () => {
    const emoji = '😀'.repeat(MAX_FIELD_LENGTH / 2);
    expect(emoji.length).toBe(MAX_FIELD_LENGTH);
    expect(createSession(sessionInput({ chatId: 'x'.repeat(MAX_FIELD_LENGTH), threadId: emoji })).threadId).toBe(emoji);
  });

  it('accepts paired surrogates, separators and non-Latin text in ids', () => {
    const chatId = 'a:b/c%3A😀中';
    expect(createSession(sessionInput({ chatId })).chatId).toBe(chatId);
  });

  it.each(['telegram', 'slack', 'x', 'web_hook-2', 'a'.repeat(32)])('accepts platform %j', (platform) => {
    expect(createSession(sessionInput({ platform })).platform).toBe(platform);
  });

  it.each(['dm', 'group', 'channel', 'thread'])('accepts chat type %j', (chatType) => {
    expect(createSession(sessionInput({ chatType })).chatType).toBe(chatType);
  });
});

describe('createSession: derived session id', () => {
  it('is stable for the same routing', () => {
    expect(createSession(FULL_SESSION).sessionId).toBe(createSession({ ...FULL_SESSION }).sessionId);
  });

  it('differs by thread, and with no thread', () => {
    const ids = [
      createSession(sessionInput({ threadId: '42' })).sessionId,
      createSession(sessionInput({ threadId: '43' })).sessionId,
      createSession(sessionInput({ threadId: undefined })).sessionId,
    ];
    expect(new Set(ids).size).toBe(3);
  });

  it('differs by chat, platform and chat type', () => {
    const ids = [
      createSession(FULL_SESSION).sessionId,
      createSession(sessionInput({ chatId: '-1001235' })).sessionId,
      createSession(sessionInput({ platform: 'discord' })).sessionId,
      createSession(sessionInput({ chatType: 'channel' })).sessionId,
    ];
    expect(new Set(ids).size).toBe(4);
  });

  it('does not change with names or the reply anchor', () => {
    const renamed = sessionInput({ chatName: 'Renamed', userName: 'Grace', messageId: 'm-2' });
    expect(createSession(renamed).sessionId).toBe(createSession(FULL_SESSION).sessionId);
  });
});

describe('createSession: re-entering', () => {
  it('returns a validated session as it is', () => {
    const session = createSession(FULL_SESSION);
    expect(isValidatedSession(session)).toBe(true);
    expect(createSession(session)).toBe(session);
  });

  it('validates a plain copy of a session again and keeps its session id', () => {
    const session = createSession(sessionInput({ sessionId: 'kept' }));
    const copy = { ...session };
    expect(isValidatedSession(copy)).toBe(false);
    const again = createSession(copy);
    expect(again).toEqual(session);
    expect(isValidatedSession(again)).toBe(true);
  });

  it('does not treat look-alike objects as validated', () => {
    expect(isValidatedSession({ ...createSession(FULL_SESSION) })).toBe(false);
    expect(isValidatedSession(null)).toBe(false);
    expect(isValidatedSession('session')).toBe(false);
  });
});

describe('createSession: refused input', () => {
  it.each([null, undefined, 'telegram', 42, true])('refuses %j as the whole session', (input) => {
    expectRefused(input, 'session');
  });

  it('refuses an array', () => {
    const error = thrownBy(() => createSession([] as unknown as SessionInput));
    expect(error).toBeInstanceOf(SessionFieldError);
  });

  it.each(['platform', 'chatId', 'chatType'])('requires %s', (field) => {
    expectRefused(sessionInput({ [field]: undefined }), field);
  });

  it.each(['threadID', 'thread_id', 'chat_id', 'ChatId', 'name', 'replyTo'])('refuses the unknown field %s', (field) => {
    const error = expectRefused(sessionInput({ [field]: 'x' }), field);
    for (const known of SESSION_FIELDS) expect(error.message).toContain(known);
  });

  it('refuses an own __proto__ field from parsed JSON', () => {
    const parsed: unknown = JSON.parse('{"platform":"slack","chatType":"dm","chatId":"D1","__proto__":{"threadId":"9"}}');
    expectRefused(parsed, '__proto__');
  });

  describe.each(TEXT_FIELDS)('text field %s', (field) => {
    it.each([42, 0, true, {}, ['42'], null, 10n])('refuses the non-string %s', (value) => {
      const error = expectRefused(sessionInput({ [field]: value }), field);
      expect(error.message).toMatch(/string/);
    });

    it('refuses the empty string', () => {
      expectRefused(sessionInput({ [field]: '' }), field);
    });

    it(`refuses more than ${MAX_FIELD_LENGTH} characters`, () => {
      expectRefused(sessionInput({ [field]: 'a'.repeat(MAX_FIELD_LENGTH + 1) }), field);
    });

    it.each(Object.entries(UNSAFE))('refuses a %s', (_name, character) => {
      const valid = field === 'platform' ? 'telegram' : 'chat';
      expectRefused(sessionInput({ [field]: `${valid}${character}x` }), field);
    });
  });

  describe.each(ID_FIELDS)('id field %s', (field) => {
    it('refuses 129 emoji (258 UTF-16 units)', () => {
      expectRefused(sessionInput({ [field]: '😀'.repeat(MAX_FIELD_LENGTH / 2 + 1) }), field);
    });

    it('refuses a lone surrogate on its own', () => {
      expectRefused(sessionInput({ [field]: '\ud83d' }), field);
    });
  });

  it.each(['Telegram', '1telegram', 'tele gram', 'telegram.', '-x', 'a'.repeat(33), 'tëlegram', '_x'])(
    'refuses the platform %j',
    (platform) => {
      expectRefused(sessionInput({ platform }), 'platform');
    },
  );

  it.each(['DM', 'private', 'supergroup', '', 'dm ', 1, null, ['dm']])('refuses the chat type %j', (chatType) => {
    expectRefused(sessionInput({ chatType }), 'chatType');
  });
});

describe('withSessionId', () => {
  it('replaces only the session id, checks it, and keeps the result frozen and re-enterable', async () => {
    const { createSession: create, withSessionId } = await import('../../src/session/index.js');
    const session = create({ platform: 'webhook', chatType: 'dm', chatId: 'c', threadId: 't' });
    const next = withSessionId(session, 'tl_other');
    expect(next).toEqual({ ...session, sessionId: 'tl_other' });
    expect(Object.isFrozen(next)).toBe(true);
    expect(create(next)).toBe(next);
    expect(() => withSessionId(session, 'a\u0000b')).toThrow(expect.objectContaining({ field: 'sessionId' }));
    expect(() => withSessionId({ ...session, chatId: '' }, 'tl_x')).toThrow(expect.objectContaining({ field: 'chatId' }));
  });
});
