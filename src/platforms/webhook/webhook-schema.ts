import { Type, type Static } from 'typebox';
import { MAX_ATTACHMENT_BYTES, type DeliveryKind } from '../../session/delivery.js';
import type { ErrorCode } from '../../errors.js';
import { CHAT_TYPES, MAX_FIELD_LENGTH } from '../../session/index.js';

/** Longest Idempotency-Key header accepted. */
export const MAX_IDEMPOTENCY_KEY = 256;

/** The OpenAPI tag of the webhook routes. */
export const WEBHOOK_TAG = 'messages';

/** The name the OpenAPI document gives THREADLINE_WEBHOOK_TOKEN's scheme. */
export const WEBHOOK_TOKEN_SCHEME = 'webhookToken';

/** THREADLINE_WEBHOOK_TOKEN, as an OpenAPI security scheme. */
export const webhookSecuritySchemes = {
  [WEBHOOK_TOKEN_SCHEME]: {
    type: 'http',
    scheme: 'bearer',
    description:
      'THREADLINE_WEBHOOK_TOKEN. When the gateway is configured with it, POST /v1/messages needs `Authorization: Bearer <token>`; without it the route is open (loopback only unless THREADLINE_ALLOW_UNAUTHENTICATED=1).',
  },
} as const;

/** A routing id or name; the session rules beyond the schema (no control characters) answer TL_SESSION_INVALID. */
const routingText = (description: string) =>
  Type.String({
    minLength: 1,
    maxLength: MAX_FIELD_LENGTH,
    description: `${description} At most ${MAX_FIELD_LENGTH} UTF-16 code units, without control characters, line separators or lone surrogates.`,
  });

/** The fixed inbound contract of POST /v1/messages. */
export const webhookMessageSchema = Type.Object(
  {
    chat_id: routingText('The conversation; every reply goes back to it.'),
    text: Type.String({ minLength: 1, description: 'What the user said.' }),
    thread_id: Type.Optional(routingText('The thread within the chat; replies go to the same thread.')),
    chat_type: Type.Optional(Type.Enum(CHAT_TYPES, { description: 'What kind of chat it is; dm when omitted.' })),
    chat_name: Type.Optional(routingText("The chat's display name, for the agent and the traces.")),
    user_id: Type.Optional(routingText('Who sent the message; trusted to name an admin only when the bearer token is configured.')),
    user_name: Type.Optional(routingText("The sender's display name.")),
    message_id: Type.Optional(
      routingText("The client's id for the message: replies carry it as in_reply_to, and a retry with the same id within the chat gets the first answer."),
    ),
  },
  { additionalProperties: false },
);

/** A POST /v1/messages body, as the schema above lets it through. */
export type WebhookMessageBody = Static<typeof webhookMessageSchema>;

/** The 202 answer: the message is stored and queued. */
export const webhookAcceptedSchema = Type.Object(
  {
    message_id: Type.String({ description: "threadline's id for the message (a time-ordered UUIDv7)." }),
    session_id: Type.String({ description: 'The session the message joined.' }),
    trace_id: Type.String({ description: 'The trace of its turn (32 hex digits): search for it in Jaeger or Tempo.' }),
  },
  {
    'x-response-description': 'Accepted: stored durably and queued for its turn. The reply is POSTed to THREADLINE_WEBHOOK_DELIVERY_URL.',
    headers: {
      'idempotent-replayed': {
        type: 'string',
        enum: ['true'],
        description: 'true when this is the first answer to the same message sent again (same Idempotency-Key or message_id): no second turn runs.',
      },
    },
  },
);

const retryAfter = {
  'retry-after': { type: 'integer', minimum: 0, description: 'Seconds to wait before retrying.' },
} as const;

/** Every refusal's `{error, code}` body, with the codes this status can carry. */
function refusal(description: string, codes: readonly [ErrorCode, ...ErrorCode[]], headers?: typeof retryAfter) {
  return Type.Object(
    {
      error: Type.String({ description: 'What was wrong, in words.' }),
      code: Type.Enum(codes, { type: 'string', description: "threadline's error code (docs/errors.md)." }),
      field: Type.Optional(Type.String({ description: 'The body field at fault, spelled as in the request, when one is.' })),
    },
    { 'x-response-description': description, ...(headers === undefined ? {} : { headers }) },
  );
}

/** What POST /v1/messages answers; every refusal leaves through src/gateway/http-errors.ts. */
export const webhookResponseSchemas = {
  202: webhookAcceptedSchema,
  400: refusal('The body is not JSON, does not match the schema, or a routing field breaks a session rule; `field` names it.', [
    'TL_BAD_REQUEST',
    'TL_SESSION_INVALID',
  ]),
  401: refusal('THREADLINE_WEBHOOK_TOKEN is configured and the bearer token is missing or wrong.', ['TL_UNAUTHORIZED']),
  413: refusal('The body is over the 64 KiB limit.', ['TL_PAYLOAD_TOO_LARGE']),
  415: refusal('The body is not JSON (Content-Type application/json).', ['TL_BAD_REQUEST']),
  422: refusal('The Idempotency-Key or message_id was sent before with a different message.', ['TL_IDEMPOTENCY_CONFLICT']),
  429: refusal(
    "The intake queue is full, or this chat's undelivered replies are at THREADLINE_OUTBOX_MAX_PER_CHAT.",
    ['TL_INTAKE_FULL', 'TL_CHAT_BACKLOG_FULL'],
    retryAfter,
  ),
  500: refusal('An unexpected failure; the gateway log and the trace have the details.', ['TL_INTERNAL']),
  503: refusal(
    'The gateway is starting or stopping, its outbox is at THREADLINE_OUTBOX_MAX_PENDING, the store failed, or the shared Redis is away or unsuitable (an evicting maxmemory-policy).',
    ['TL_STARTING', 'TL_SHUTTING_DOWN', 'TL_OUTBOX_FULL', 'TL_STORE_FAILED', 'TL_REDIS_UNAVAILABLE', 'TL_REDIS_UNSUITABLE'],
    retryAfter,
  ),
};

/**
 * Request headers the handler reads, for the document only: Ajv does not check them, the
 * handler answers a bad Idempotency-Key in its own words.
 */
export const webhookRequestHeaders = Type.Object({
  'idempotency-key': Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: MAX_IDEMPOTENCY_KEY,
      description: "The client's key for this message (wins over message_id): a retry with the same key within the chat gets the first answer.",
    }),
  ),
  traceparent: Type.Optional(
    Type.String({ description: 'W3C trace context: joined when the caller presented the bearer token, otherwise only linked.' }),
  ),
  baggage: Type.Optional(Type.String({ description: 'W3C baggage: never routes a message; foreign entries are kept only as THREADLINE_INBOUND_BAGGAGE allows.' })),
});

const DELIVERY_KINDS = ['reply', 'notification', 'cron', 'send'] as const satisfies readonly DeliveryKind[];

/** base64 of at most MAX_ATTACHMENT_BYTES: four characters for every three bytes, padded. */
const MAX_ATTACHMENT_BASE64 = Math.ceil(MAX_ATTACHMENT_BYTES / 3) * 4;

/** A file sent with a delivery (the tts tool's voice note), inline. */
export const webhookAttachmentSchema = Type.Object(
  {
    filename: Type.String({ minLength: 1, description: 'A name for the file, e.g. voice.ogg.' }),
    content_type: Type.String({ minLength: 1, description: 'Its media type: audio/ogg (Opus) for a voice note.' }),
    data_base64: Type.String({
      maxLength: MAX_ATTACHMENT_BASE64,
      pattern: '^[A-Za-z0-9+/]*={0,2}$',
      description: `The file's bytes, base64 (standard alphabet, padded); at most ${MAX_ATTACHMENT_BYTES} bytes (1 MiB) before encoding.`,
    }),
  },
  { additionalProperties: false, description: "A file sent with the text (the tts tool's voice note); absent when there is none." },
);

/** What is POSTed to THREADLINE_WEBHOOK_DELIVERY_URL for each delivery. */
export const webhookDeliverySchema = Type.Object(
  {
    chat_id: Type.String({ description: 'The chat the message came from (or the target of a send).' }),
    thread_id: Type.Union([Type.String(), Type.Null()], { description: 'Its thread; null when there is none.' }),
    text: Type.String(),
    kind: Type.Enum(DELIVERY_KINDS, { type: 'string', description: 'reply to a message, notification, cron job output, or an explicit send.' }),
    in_reply_to: Type.Optional(Type.String({ description: 'The message_id of the message answered, when it had one.' })),
    trace_id: Type.String({ description: 'The trace of the message, as its 202 answered.' }),
    idempotency_key: Type.String({ description: 'The same for every attempt of this delivery (also the Idempotency-Key header): dedupe on it.' }),
    attachment: Type.Optional(webhookAttachmentSchema),
    button: Type.Optional(
      Type.Object(
        { label: Type.String(), command: Type.String({ description: 'Posted as a message of whoever presses it, in this chat and thread.' }) },
        { additionalProperties: false, description: 'A button to show under the text, where the client has buttons (an admin confirmation); the text also says what to type.' },
      ),
    ),
  },
  { additionalProperties: false },
);

export type WebhookDelivery = Static<typeof webhookDeliverySchema>;
