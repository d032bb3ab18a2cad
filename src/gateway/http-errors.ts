import { SpanStatusCode } from '@opentelemetry/api';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { STATUS_CODES, maxHeaderSize } from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import { SessionFieldError, ThreadlineError, type ErrorCode } from '../errors.js';
import type { HttpLimits } from './gateway-config.js';
import { inboundContext } from '../session/index.js';
import type { GatewayMetrics } from '../telemetry/gateway-metrics.js';
import { rejectSpanLimit } from '../telemetry/reject-span-limit.js';
import { threadlineTracer } from '../telemetry/tracer.js';

const tracer = threadlineTracer();

/** Session fields as the webhook contract spells them, so a 400 names the field the caller sent. */
const BODY_FIELDS: Record<string, string> = {
  chatId: 'chat_id',
  threadId: 'thread_id',
  chatType: 'chat_type',
  chatName: 'chat_name',
  userId: 'user_id',
  userName: 'user_name',
  messageId: 'message_id',
};

/** What a caller refused for a full outbox is asked to wait: a target that is down takes a while. */
const OUTBOX_FULL_RETRY_AFTER_SECONDS = 30;
/** Seconds a refused caller is asked to wait, by the code it was refused with. */
const RETRY_AFTER_SECONDS: Partial<Record<ErrorCode, number>> = {
  TL_INTAKE_FULL: 1,
  TL_STARTING: 1,
  TL_CHAT_BACKLOG_FULL: OUTBOX_FULL_RETRY_AFTER_SECONDS,
  TL_OUTBOX_FULL: OUTBOX_FULL_RETRY_AFTER_SECONDS,
  // An operator has to set the policy back: no point in knocking every second.
  TL_REDIS_UNSUITABLE: OUTBOX_FULL_RETRY_AFTER_SECONDS,
};

/**
 * Every failure leaves as `{error, code}` (and `field` when one field is at fault) with the
 * status of its code; unexpected errors are logged and answered 500 without detail.
 */
export function errorHandler(logger: Logger, metrics: GatewayMetrics) {
  return (error: FastifyError | Error, request: FastifyRequest, reply: FastifyReply): FastifyReply => {
    const code = answer(error, request, reply, logger);
    recordRejection(request, reply.statusCode, code);
    countRefusal(metrics, request, code, error);
    return reply;
  };
}

/**
 * Counts a refused intake request under its platform (the route's `config.platform`), and one
 * refused before routing (an undecodable path) under none; failures of other routes (health)
 * refuse no message. Intake has counted its own refusals already, with the same error: those
 * are not counted twice.
 */
function countRefusal(metrics: GatewayMetrics, request: FastifyRequest, code: ErrorCode, error: Error): void {
  const routed = request.routeOptions.url !== undefined;
  const platform = routed ? request.routeOptions.config.platform : undefined;
  if (routed && platform === undefined) return;
  metrics.refused(code, platform, error);
}

/** Sends the answer for `error`; returns its code. */
function answer(error: FastifyError | Error, request: FastifyRequest, reply: FastifyReply, logger: Logger): ErrorCode {
  if (error instanceof SessionFieldError) {
    const field = BODY_FIELDS[error.field] ?? error.field;
    return send(reply, error.statusCode, error.code, error.message.replace(`"${error.field}"`, `"${field}"`), field);
  }
  if (error instanceof ThreadlineError) {
    const retryAfter = RETRY_AFTER_SECONDS[error.code];
    if (retryAfter !== undefined) reply.header('retry-after', String(retryAfter));
    return send(reply, error.statusCode, error.code, error.message);
  }
  const fastifyError = error as FastifyError;
  if (fastifyError.validation !== undefined) {
    const [first] = fastifyError.validation;
    const params = (first?.params ?? {}) as Record<string, unknown>;
    const field =
      String(params['missingProperty'] ?? params['additionalProperty'] ?? first?.instancePath.replace(/^\//, '') ?? '') ||
      undefined;
    const reason = params['additionalProperty'] !== undefined ? 'is not a field of this API' : first?.message ?? 'is invalid';
    return send(reply, 400, 'TL_BAD_REQUEST', `body field "${field ?? '?'}" ${reason}`, field);
  }
  if (fastifyError.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
    return send(reply, 413, 'TL_PAYLOAD_TOO_LARGE', 'The body is over the 64 KiB limit');
  }
  const status = fastifyError.statusCode;
  if (status !== undefined && status >= 400 && status < 500) {
    return send(reply, status, 'TL_BAD_REQUEST', error.message);
  }
  logger.error({ err: error, method: request.method, url: request.url }, 'request failed');
  return send(reply, 500, 'TL_INTERNAL', 'Internal error; the gateway log has the details');
}

function send(reply: FastifyReply, status: number, code: ErrorCode, error: string, field?: string): ErrorCode {
  reply.code(status).send(field === undefined ? { error, code } : { error, code, field });
  return code;
}

/**
 * Inbound POSTs get no http server span (gateway.message is their root), so a refused one
 * gets a span of its own: a bad signature or a 429 storm is then visible in the trace store.
 * Built with inbound distrust like any message.
 */
function recordRejection(request: FastifyRequest, status: number, code: ErrorCode): void {
  // Rate-limited (THREADLINE_REJECT_SPANS_PER_SECOND): a 401 storm must not fill the trace store.
  if (!rejectSpanLimit().take()) return;
  const inbound = inboundContext(request.headers);
  const span = tracer.startSpan(
    'gateway.reject',
    {
      links: inbound.links,
      attributes: {
        'http.request.method': request.method,
        'url.path': request.url.split('?')[0]!,
        'http.response.status_code': status,
        'error.type': code,
      },
    },
    inbound.context,
  );
  span.setStatus({ code: SpanStatusCode.ERROR, message: code });
  span.end();
}

/**
 * node:http's 'clientError' (fastify's clientErrorHandler option): what fails before any
 * request object exists, answered on the raw socket in the same `{error, code}` shape and
 * then closed. A request cut off by the headers or request timeout (node reports both as
 * ERR_HTTP_REQUEST_TIMEOUT) is a 408 TL_REQUEST_TIMEOUT; headers over node's size limit a 431
 * and any other parse error a 400, both TL_BAD_REQUEST. Where an answer has already begun on
 * the socket (a 401 or 415 sent before the body arrived) nothing more is written: a second
 * response would be read as the answer to the client's next request. The error is logged by
 * its code only: its raw packet can hold the request's headers, credentials included.
 */
export function clientErrorHandler(
  logger: Logger,
  limits: Pick<HttpLimits, 'headersTimeoutMs' | 'requestTimeoutMs'>,
  metrics: GatewayMetrics,
) {
  return (error: Error & { code?: string }, socket: Socket): void => {
    // A reset socket is gone: there is nobody to answer.
    if (error.code === 'ECONNRESET' || socket.destroyed) return;
    const [status, code, message] = clientErrorAnswer(error.code, limits);
    logger.debug({ code: error.code, status }, 'client connection error; answered and closed');
    const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
    if (!socket.writable || inFlight?.headersSent === true) {
      socket.destroy();
      return;
    }
    // No request was parsed, so no platform is known; one already answered was counted then.
    metrics.refused(code, undefined);
    const body = JSON.stringify({ error: message, code });
    // end(), then destroy once written: the answer is flushed, and a client that never closes its side holds nothing.
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      () => socket.destroy(),
    );
  };
}

function clientErrorAnswer(errorCode: string | undefined, limits: Pick<HttpLimits, 'headersTimeoutMs' | 'requestTimeoutMs'>): [number, ErrorCode, string] {
  if (errorCode === 'ERR_HTTP_REQUEST_TIMEOUT') {
    return [
      408,
      'TL_REQUEST_TIMEOUT',
      `The request did not arrive in time: headers are due within ${limits.headersTimeoutMs} ms, the whole request within ${limits.requestTimeoutMs} ms`,
    ];
  }
  if (errorCode === 'HPE_HEADER_OVERFLOW') {
    return [431, 'TL_BAD_REQUEST', `The request headers are over the ${Math.floor(maxHeaderSize / 1024)} KiB limit`];
  }
  return [400, 'TL_BAD_REQUEST', `Malformed HTTP request${errorCode?.startsWith('HPE_') ? ` (${errorCode})` : ''}`];
}
