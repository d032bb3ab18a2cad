import { createHash } from 'node:crypto';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { ThreadlineError } from '../../errors.js';
import { inboundContext, outboundHeaders, type InboundOptions, type KeepBaggage } from '../../session/index.js';
import { bearerToken, secretsMatch } from '../bearer-token.js';
import { HttpPoster } from '../http-delivery.js';
import { safeUrl } from '../../text/redact-secrets.js';
import { basicAuthOf } from '../basic-auth.js';
import { AcceptOnce } from '../accept-once.js';
import type { Idempotency, InboundMessage, Intake, OutboundMessage, Platform } from '../platform.js';
import {
  MAX_IDEMPOTENCY_KEY,
  WEBHOOK_TAG,
  WEBHOOK_TOKEN_SCHEME,
  webhookMessageSchema,
  webhookRequestHeaders,
  webhookResponseSchemas,
  type WebhookDelivery,
  type WebhookMessageBody,
} from './webhook-schema.js';

export interface WebhookOptions {
  /** THREADLINE_WEBHOOK_TOKEN: when set, inbound requests need `Authorization: Bearer <token>`. */
  readonly token?: string | undefined;
  /** THREADLINE_WEBHOOK_DELIVERY_URL: where replies are POSTed; unset, they go to the log. */
  readonly deliveryUrl?: string | undefined;
  /** THREADLINE_WEBHOOK_IDEMPOTENCY_MS: how long a message_id or Idempotency-Key is remembered. */
  readonly idempotencyTtlMs: number;
  readonly logger: Logger;
  readonly timeoutMs?: number;
  /** THREADLINE_INBOUND_BAGGAGE: foreign inbound baggage to keep (default none). */
  readonly keepBaggage?: KeepBaggage;
}

export const WEBHOOK_PATH = '/v1/messages';
const MAX_BODY_BYTES = 64 * 1024;

/** The generic webhook platform: JSON in on POST /v1/messages, JSON out to a delivery URL. */
export class WebhookPlatform implements Platform {
  readonly name = 'webhook';
  private readonly poster = new HttpPoster();
  /** A client retrying before its first try was answered waits for that answer. */
  private readonly once = new AcceptOnce();
  private readonly deliveryUrl: URL | undefined;
  /** The delivery URL's `user:password@`, sent as HTTP Basic auth. */
  private readonly deliveryAuth: string | undefined;
  /** Only a caller that presented the token is trusted to say who the user is (user_id). */
  readonly authenticatesSenders: boolean;
  /** How each request's context is built. */
  private readonly inbound: InboundOptions;

  constructor(private readonly options: WebhookOptions) {
    this.deliveryUrl = options.deliveryUrl === undefined ? undefined : new URL(options.deliveryUrl);
    this.deliveryAuth = this.deliveryUrl === undefined ? undefined : basicAuthOf(this.deliveryUrl);
    this.authenticatesSenders = options.token !== undefined;
    this.inbound = { authenticated: this.authenticatesSenders, keepBaggage: options.keepBaggage ?? false };
  }

  register(app: FastifyInstance, intake: Intake): void {
    const { token } = this.options;
    // The type provider infers request.body and each answer from the TypeBox schemas.
    app.withTypeProvider<TypeBoxTypeProvider>().post(
      WEBHOOK_PATH,
      {
        bodyLimit: MAX_BODY_BYTES,
        schema: {
          tags: [WEBHOOK_TAG],
          operationId: 'postMessage',
          summary: 'Send a message into a chat; its replies are POSTed to THREADLINE_WEBHOOK_DELIVERY_URL',
          // Either scheme: the token is required only when THREADLINE_WEBHOOK_TOKEN is configured.
          security: [{ [WEBHOOK_TOKEN_SCHEME]: [] }, {}],
          body: webhookMessageSchema,
          response: webhookResponseSchemas,
        },
        config: {
          platform: this.name,
          // Documented only: the handler, not Ajv, checks these headers and answers in its own words.
          swaggerTransform: ({ schema, url }) => ({ schema: { ...schema, headers: webhookRequestHeaders }, url }),
        },
        // Before the body is read: an unauthenticated caller gets 401, not a parse error.
        onRequest: async (request) => {
          if (token !== undefined && !secretsMatch(bearerToken(request.headers.authorization), token)) {
            throw new ThreadlineError('TL_UNAUTHORIZED', 'Send Authorization: Bearer <THREADLINE_WEBHOOK_TOKEN>');
          }
        },
      },
      async (request, reply) => {
        const body = request.body;
        const inbound = inboundContext(request.headers, this.inbound);
        const idempotency = idempotencyOf(request.headers['idempotency-key'], body, this.options.idempotencyTtlMs);
        const message: InboundMessage = {
          session: {
            platform: 'webhook',
            chatId: body.chat_id,
            chatType: body.chat_type ?? 'dm',
            ...(body.thread_id === undefined ? {} : { threadId: body.thread_id }),
            ...(body.chat_name === undefined ? {} : { chatName: body.chat_name }),
            ...(body.user_id === undefined ? {} : { userId: body.user_id }),
            ...(body.user_name === undefined ? {} : { userName: body.user_name }),
            ...(body.message_id === undefined ? {} : { messageId: body.message_id }),
          },
          text: body.text,
        };
        const accept = () => intake.accept(message, inbound, idempotency);
        const accepted = idempotency === undefined ? await accept() : await this.once.accept(idempotency.key, accept);
        // A retry gets the first answer, and no second turn.
        if (accepted.duplicate) reply.header('idempotent-replayed', 'true');
        return reply.code(202).send({
          message_id: accepted.messageId,
          session_id: accepted.sessionId,
          trace_id: accepted.traceId,
        });
      },
    );
  }

  async send(message: OutboundMessage, signal: AbortSignal): Promise<void> {
    const url = this.deliveryUrl;
    const payload: WebhookDelivery = {
      chat_id: message.destination.chatId,
      thread_id: message.destination.threadId ?? null,
      text: message.text,
      kind: message.kind,
      ...(message.inReplyTo === undefined ? {} : { in_reply_to: message.inReplyTo }),
      trace_id: message.traceId,
      idempotency_key: message.id,
      ...(message.button === undefined ? {} : { button: { label: message.button.label, command: message.button.command } }),
      ...(message.attachment === undefined
        ? {}
        : {
            attachment: {
              filename: message.attachment.filename,
              content_type: message.attachment.contentType,
              data_base64: message.attachment.dataBase64,
            },
          }),
    };
    if (url === undefined) {
      // The file's bytes stay out of the log: its name, type and size say enough.
      this.options.logger.info({ delivery: forTheLog(payload) }, 'webhook delivery (THREADLINE_WEBHOOK_DELIVERY_URL is not set)');
      return;
    }
    await this.poster.post(url, JSON.stringify(payload), {
      headers: outboundHeaders(url, {
        'content-type': 'application/json',
        'idempotency-key': message.id,
        ...(this.deliveryAuth === undefined ? {} : { authorization: this.deliveryAuth }),
      }),
      timeoutMs: this.options.timeoutMs ?? 10_000,
      signal,
      what: `Webhook delivery URL ${url.origin}`,
    });
  }

  describe(baseUrl: string): string {
    // Origin and path only: the URL may carry user:password@ or a token in its query.
    const out = this.deliveryUrl === undefined ? 'the log' : `${safeUrl(this.deliveryUrl)}${this.deliveryAuth === undefined ? '' : ' (basic auth)'}`;
    const auth = this.options.token === undefined ? 'no token' : 'bearer token';
    return `webhook: POST ${baseUrl}${WEBHOOK_PATH} (${auth}) → ${out}`;
  }
}

/** A delivery as logged: an attachment by name, type and size, not up to 1.3 MB of base64. */
function forTheLog(payload: WebhookDelivery): Record<string, unknown> {
  if (payload.attachment === undefined) return payload;
  const { data_base64: data, ...file } = payload.attachment;
  return { ...payload, attachment: { ...file, bytes: Math.floor((data.length * 3) / 4) - (data.match(/=+$/)?.[0].length ?? 0) } };
}

/**
 * A client's Idempotency-Key header, else the message_id, each within its chat: a client
 * retrying a message whose 202 it never saw gets that 202 and one turn. The fingerprint of
 * what the message says tells a retry from a new message that reused the key.
 */
function idempotencyOf(header: string | string[] | undefined, body: WebhookMessageBody, ttlMs: number): Idempotency | undefined {
  let id: string;
  if (header !== undefined) {
    if (typeof header !== 'string' || header.length === 0 || header.length > MAX_IDEMPOTENCY_KEY) {
      throw new ThreadlineError('TL_BAD_REQUEST', `Idempotency-Key must be one header of 1 to ${MAX_IDEMPOTENCY_KEY} characters`);
    }
    id = `key:${encodeURIComponent(header)}`;
  } else if (body.message_id !== undefined) {
    id = `message:${encodeURIComponent(body.message_id)}`;
  } else {
    return undefined;
  }
  const fingerprint = createHash('sha256').update(JSON.stringify([body.thread_id ?? null, body.user_id ?? null, body.text])).digest('base64url').slice(0, 22);
  return { key: `webhook:${encodeURIComponent(body.chat_id)}:${id}`, ttlMs, fingerprint };
}
