import { ROOT_CONTEXT, propagation, type Context } from '@opentelemetry/api';
import { DEFAULT_OUTBOUND_POLICY, contextWithSession, names, type OutboundBaggagePolicy, type SessionInput } from '../../src/session/index.js';
import { FULL_SESSION } from './sessions.js';

/** The threadline keys the README says go to every host by default. */
export const DOCUMENTED_DEFAULT_KEYS: readonly string[] = [names.CHAT_PLATFORM, names.CHAT_ID, names.CHAT_THREAD_ID, names.SESSION_ID];

/** Inbound members in threadline's namespaces, in mixed case: a caller posing as a chat (pitfall: Routing taken from inbound baggage). */
export const SPOOFED_MEMBERS: readonly string[] = [
  'chat.id=evil',
  'Chat.Id=evil2',
  'CHAT.THREAD.ID=9',
  'chat.platform=x',
  'session.id=s',
  'user.id=u',
  'USER.NAME=n',
  'message.id=m',
  'threadline.x=1',
  'gen_ai.conversation.id=g',
];
export const SPOOFED_HEADER = SPOOFED_MEMBERS.join(',');

/** Default keys, plus an exact rule ahead of a suffix rule that also matches it, and a rule that sends none. */
export const HOST_RULES: OutboundBaggagePolicy = {
  keys: DEFAULT_OUTBOUND_POLICY.keys,
  hosts: [
    { host: 'api.example.com', keys: [names.CHAT_ID] },
    { host: '*.example.com', keys: [names.SESSION_ID, names.CHAT_TYPE] },
    { host: '*.internal', keys: [] },
  ],
};

/** A context in `session` whose baggage also holds `foreign` entries, as a caller's might. */
export function sessionContextWithForeign(foreign: Record<string, string>, session: SessionInput = FULL_SESSION): Context {
  const ctx = contextWithSession(ROOT_CONTEXT, session);
  let baggage = propagation.getBaggage(ctx)!;
  for (const [key, value] of Object.entries(foreign)) baggage = baggage.setEntry(key, { value });
  return propagation.setBaggage(ctx, baggage);
}

/** `count` foreign entries of about `size` bytes each. */
export function manyForeignEntries(count: number, size: number): Record<string, string> {
  return Object.fromEntries(Array.from({ length: count }, (_, i) => [`foreign${i}`, 'v'.repeat(size)]));
}
