import { ROOT_CONTEXT, context, type Attributes } from '@opentelemetry/api';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import { contextWithSession, createSession, names, type SessionInput } from '../../src/session/index.js';
import { SessionSpanProcessor, pseudonymize, type SessionAttributeOptions } from '../../src/telemetry/index.js';
import { thrownBy } from '../helpers/errors.js';
import { FULL_SESSION, sessionInput } from '../helpers/sessions.js';
import { createTestTracing, type TestTracing } from '../helpers/tracing.js';

const KEY = 'k'.repeat(32);
const OTHER_KEY = 'o'.repeat(32);
const session = createSession(FULL_SESSION);
const providers: TestTracing[] = [];
afterAll(() => Promise.all(providers.map((tracing) => tracing.provider.shutdown())));

/** The attributes a span started in `input`'s session gets from a processor with `options`. */
function stamped(options: SessionAttributeOptions, input: SessionInput = FULL_SESSION): Attributes {
  const tracing = createTestTracing([new SessionSpanProcessor(options)]);
  providers.push(tracing);
  tracing.tracer.startSpan('work', {}, contextWithSession(ROOT_CONTEXT, input)).end();
  return tracing.span('work').attributes;
}

describe('SessionSpanProcessor, plain (default)', () => {
  it('stamps exactly the documented attributes', () => {
    expect(stamped({})).toEqual({
      [names.CHAT_PLATFORM]: session.platform,
      [names.CHAT_TYPE]: session.chatType,
      [names.CHAT_ID]: session.chatId,
      [names.CHAT_THREAD_ID]: session.threadId,
      [names.USER_ID]: session.userId,
      [names.SESSION_ID]: session.sessionId,
      [names.GEN_AI_CONVERSATION_ID]: session.sessionId,
    });
  });

  it('leaves chat.thread.id out when there is no thread', () => {
    const attributes = stamped({}, sessionInput({ threadId: undefined }));
    expect(attributes).not.toHaveProperty(names.CHAT_THREAD_ID);
    expect(attributes[names.CHAT_ID]).toBe(session.chatId);
  });

  it('leaves user.id out when the session has no user', () => {
    const attributes = stamped({}, sessionInput({ userId: undefined }));
    expect(attributes).not.toHaveProperty(names.USER_ID);
    expect(attributes[names.CHAT_ID]).toBe(session.chatId);
  });

  it('stamps nothing outside a session', () => {
    const tracing = createTestTracing([new SessionSpanProcessor()]);
    providers.push(tracing);
    tracing.tracer.startSpan('bare', {}, ROOT_CONTEXT).end();
    expect(tracing.span('bare').attributes).toEqual({});
  });

  it('stamps chat.name only with includeChatName', () => {
    expect(stamped({ includeChatName: true })[names.CHAT_NAME]).toBe(FULL_SESSION.chatName);
    expect(stamped({ includeChatName: true }, sessionInput({ chatName: undefined }))).not.toHaveProperty(names.CHAT_NAME);
  });

  it('never stamps user.name or the reply anchor', () => {
    const values = Object.values(stamped({ includeChatName: true }));
    expect(values).not.toContain(FULL_SESSION.userName);
    expect(values).not.toContain(FULL_SESSION.messageId);
  });
});

describe('SessionSpanProcessor reads the parentContext, not the active context', () => {
  const tracing = createTestTracing([new SessionSpanProcessor()]);
  providers.push(tracing);
  const explicit = contextWithSession(ROOT_CONTEXT, sessionInput({ chatId: 'explicit', threadId: 'explicit-thread' }));
  const active = contextWithSession(ROOT_CONTEXT, sessionInput({ chatId: 'active', threadId: 'active-thread' }));

  it('with startSpan', () => {
    context.with(active, () => tracing.tracer.startSpan('explicit', {}, explicit).end());
    expect(tracing.span('explicit').attributes).toMatchObject({ [names.CHAT_ID]: 'explicit', [names.CHAT_THREAD_ID]: 'explicit-thread' });
  });

  it('with startActiveSpan', () => {
    context.with(active, () => tracing.tracer.startActiveSpan('explicit-active', {}, explicit, (span) => span.end()));
    expect(tracing.span('explicit-active').attributes[names.CHAT_ID]).toBe('explicit');
  });

  it('with an explicit root context inside a session', () => {
    context.with(active, () => tracing.tracer.startSpan('root', {}, ROOT_CONTEXT).end());
    expect(tracing.span('root').attributes).toEqual({});
  });

  it('uses the active context when none is given', () => {
    context.with(active, () => tracing.tracer.startSpan('implicit').end());
    expect(tracing.span('implicit').attributes[names.CHAT_ID]).toBe('active');
  });

  it('keeps sessions apart across spans (per-session cache)', () => {
    ['a', 'b', 'a'].forEach((chatId, i) => {
      tracing.tracer.startSpan(`cache-${i}`, {}, contextWithSession(ROOT_CONTEXT, sessionInput({ chatId }))).end();
    });
    const stampedIds = tracing
      .spans()
      .filter((span) => span.name.startsWith('cache-'))
      .map((span) => span.attributes[names.CHAT_ID]);
    expect(stampedIds).toEqual(['a', 'b', 'a']);
  });
});

describe('SessionSpanProcessor, hmac', () => {
  const attributes = stamped({ privacy: 'hmac', hmacKey: KEY });

  it('stamps keyed pseudonyms for chat, thread, user and session ids', () => {
    expect(attributes).toEqual({
      [names.CHAT_PLATFORM]: session.platform,
      [names.CHAT_TYPE]: session.chatType,
      [names.CHAT_ID]: pseudonymize(session.chatId, KEY),
      [names.CHAT_THREAD_ID]: pseudonymize(session.threadId!, KEY),
      [names.USER_ID]: pseudonymize(session.userId!, KEY),
      [names.SESSION_ID]: pseudonymize(session.sessionId, KEY),
      [names.GEN_AI_CONVERSATION_ID]: pseudonymize(session.sessionId, KEY),
    });
    expect(attributes[names.CHAT_ID]).toMatch(/^h_[A-Za-z0-9_-]{22}$/);
  });

  it('never lets a raw id or name reach any attribute', () => {
    const text = JSON.stringify(attributes);
    for (const raw of [session.chatId, session.threadId!, session.sessionId, session.userId!, session.chatName!, session.userName!]) {
      expect(text).not.toContain(raw);
    }
  });

  it('is stable across processor instances with the same key', () => {
    expect(stamped({ privacy: 'hmac', hmacKey: KEY })).toEqual(attributes);
  });

  it('differs with another key', () => {
    const other = stamped({ privacy: 'hmac', hmacKey: OTHER_KEY });
    for (const name of [names.CHAT_ID, names.CHAT_THREAD_ID, names.USER_ID, names.SESSION_ID]) expect(other[name]).not.toBe(attributes[name]);
  });

  it('differs between chats', () => {
    expect(stamped({ privacy: 'hmac', hmacKey: KEY }, sessionInput({ chatId: '-1001235' }))[names.CHAT_ID]).not.toBe(attributes[names.CHAT_ID]);
  });
});

describe('SessionSpanProcessor, off', () => {
  it('stamps only chat.platform and chat.type: no chat, thread, user or session id', () => {
    expect(stamped({ privacy: 'off' })).toEqual({ [names.CHAT_PLATFORM]: session.platform, [names.CHAT_TYPE]: session.chatType });
  });
});

describe('SessionSpanProcessor options', () => {
  it.each<[string, SessionAttributeOptions, string]>([
    ['hmac without a key', { privacy: 'hmac' }, 'THREADLINE_SPAN_HMAC_KEY'],
    ['hmac with a 15-byte key', { privacy: 'hmac', hmacKey: 'k'.repeat(15) }, 'THREADLINE_SPAN_HMAC_KEY'],
    ['hmac with an empty key', { privacy: 'hmac', hmacKey: '' }, 'THREADLINE_SPAN_HMAC_KEY'],
    ['chat name with hmac', { privacy: 'hmac', hmacKey: KEY, includeChatName: true }, 'THREADLINE_SPAN_CHAT_NAME'],
    ['chat name with off', { privacy: 'off', includeChatName: true }, 'THREADLINE_SPAN_CHAT_NAME'],
    ['an unknown privacy mode', { privacy: 'HMAC' as 'hmac', hmacKey: KEY }, 'THREADLINE_SPAN_PRIVACY'],
  ])('refuses %s with a ConfigError', (_name, options, variable) => {
    const error = thrownBy(() => new SessionSpanProcessor(options));
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).code).toBe('TL_CONFIG_INVALID');
    expect((error as ConfigError).variable).toBe(variable);
  });

  it('measures the key in bytes: 8 two-byte characters are enough', () => {
    const key = 'é'.repeat(8);
    expect(stamped({ privacy: 'hmac', hmacKey: key })[names.CHAT_ID]).toBe(pseudonymize(session.chatId, key));
  });

  it('never puts the key in an error message', () => {
    const error = thrownBy(() => new SessionSpanProcessor({ privacy: 'hmac', hmacKey: 'short-secret' }));
    expect((error as Error).message).not.toContain('short-secret');
  });
});
