import fc from 'fast-check';
import { CHAT_TYPES, type ChatType, type SessionKeyParts } from '../../src/session/index.js';
import { SPOOFED_MEMBERS } from './baggage.js';

/** Characters that broke joined keys and percent-encoding elsewhere, plus wide ones. */
const TRICKY_CHARACTERS = [':', '/', '%', '%3A', '%25', '=', ',', ';', ' ', 'é', '中', '😀', '\u200d', '\u{10FFFF}'];

/**
 * Ids a session accepts: 1-40 printable characters, biased towards the separators and
 * escapes that make naive keys collide.
 */
export const idArb: fc.Arbitrary<string> = fc.string({
  unit: fc.oneof(fc.constantFrom(...TRICKY_CHARACTERS), fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 1 })),
  minLength: 1,
  maxLength: 40,
});

/** Any non-empty text of whole code points, controls included: what a key must still encode. */
export const anyIdArb: fc.Arbitrary<string> = fc.oneof(idArb, fc.string({ unit: 'binary', minLength: 1, maxLength: 40 }));

/** A narrow alphabet, so two random ids often differ only by where a ':' falls. */
export const collidingIdArb: fc.Arbitrary<string> = fc.string({
  unit: fc.constantFrom('a', ':', '%', '3A', 'b'),
  minLength: 1,
  maxLength: 6,
});

export const platformArb: fc.Arbitrary<string> = fc.stringMatching(/^[a-z][a-z0-9_-]{0,31}$/);
export const chatTypeArb: fc.Arbitrary<ChatType> = fc.constantFrom(...CHAT_TYPES);

/** Session key parts with ids from `id`. */
export function keyPartsArb(id: fc.Arbitrary<string> = anyIdArb): fc.Arbitrary<SessionKeyParts> {
  return fc.record(
    { platform: platformArb, chatType: chatTypeArb, chatId: id, threadId: id, userId: id },
    { requiredKeys: ['platform', 'chatType', 'chatId'] },
  );
}

/** Baggage keys a caller could use to pose as a chat, in any case. */
const SPOOF_KEYS = SPOOFED_MEMBERS.map((member) => member.split('=')[0]!);

/** Broken percent-encoding, separators and oversized text for baggage members. */
const baggageTextArb = fc.oneof(
  fc.constantFrom('%zz', '%E0%A4%A', '%', '%%', '%C3', '%ED%A0%80', '', ' ', '=', ';', ',', 'x;prop=1', 'a=b=c'),
  fc.string({ maxLength: 30 }),
  fc.string({ unit: 'binary', maxLength: 30 }),
  fc.string({ unit: fc.constantFrom('x', '%', '=', ',', ';'), minLength: 4000, maxLength: 9000 }),
);

/** Inbound baggage header values: spoofed threadline keys, foreign keys and garbage. */
export const hostileBaggageArb: fc.Arbitrary<string> = fc
  .array(
    fc.tuple(fc.oneof(fc.constantFrom(...SPOOF_KEYS), fc.constantFrom('tenant', 'foo'), baggageTextArb), baggageTextArb),
    { maxLength: 120 },
  )
  .map((members) => members.map(([key, value]) => `${key}=${value}`).join(','));

const traceparentArb = fc.oneof(
  fc.constant('00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'),
  fc.constant('00-00000000000000000000000000000000-0000000000000000-01'),
  fc.constant('ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'),
  fc.string({ maxLength: 200 }),
);

/** A header value as node:http or a hostile caller could hand it over, and worse. */
const headerValueArb: fc.Arbitrary<unknown> = fc.oneof(
  hostileBaggageArb,
  traceparentArb,
  fc.array(fc.oneof(hostileBaggageArb, traceparentArb), { maxLength: 4 }),
  fc.string({ unit: 'binary', maxLength: 200 }),
  fc.anything(),
);

/** Inbound header records: the names threadline reads (in several cases) and others. */
export const inboundHeadersArb: fc.Arbitrary<Record<string, unknown>> = fc.dictionary(
  fc.oneof(fc.constantFrom('traceparent', 'tracestate', 'baggage', 'Baggage', 'BAGGAGE', 'x-chat-id'), fc.string({ maxLength: 20 })),
  headerValueArb,
  { maxKeys: 6 },
);
