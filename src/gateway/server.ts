import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify';
import type { Logger } from 'pino';
import { ThreadlineError, messageOf } from '../errors.js';
import type { Platform } from '../platforms/platform.js';
import type { Gateway, GatewayHealth } from './gateway.js';
import type { HttpLimits } from './gateway-config.js';
import { clientErrorHandler, errorHandler } from './http-errors.js';
import { HEALTH_TAG, registerOpenApi } from './openapi.js';

const MAX_BODY_BYTES = 64 * 1024;
/** Under the one second Kubernetes gives a probe by default, so a stuck store fails readiness with an answer. */
export const PROBE_STORE_TIMEOUT_MS = 800;

export interface ProbeOptions {
  /** How long /v1/health and /v1/ready wait for the store before they say it failed. */
  readonly storeTimeoutMs: number;
}

/**
 * The HTTP face: each platform registers its inbound routes; /v1/health (alive) and /v1/ready
 * (takes messages) are the probes, see registerProbes. Ajv is strict: no type
 * coercion and no silent removal of unknown fields, so a malformed body is a 400 that names
 * the field, never a guess. Every client is bounded (see HttpLimits): a slow or silent one is
 * cut off with a 408, and one past the connection cap is closed as it arrives. Every refusal,
 * those made before a route runs included (a timeout, malformed HTTP, a URL that cannot be
 * decoded), answers in threadline's `{error, code}` shape.
 */
export function buildServer(
  gateway: Gateway,
  platforms: readonly Platform[],
  logger: Logger,
  limits: HttpLimits,
  probes: ProbeOptions = { storeTimeoutMs: PROBE_STORE_TIMEOUT_MS },
): FastifyInstance {
  const handleError = errorHandler(logger, gateway.metrics);
  const app = Fastify({
    bodyLimit: MAX_BODY_BYTES,
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, useDefaults: false } },
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    http: {
      headersTimeout: limits.headersTimeoutMs,
      // Node checks both deadlines on this interval (default 30 s, which would double a 30 s timeout).
      connectionsCheckingInterval: Math.min(1_000, limits.headersTimeoutMs),
    },
    // Failures before any request exists (timeouts, parse errors), on the raw socket.
    clientErrorHandler: clientErrorHandler(logger, limits, gateway.metrics),
    // Failures of fastify's router (a path that cannot be percent-decoded): the usual handler.
    frameworkErrors: (error, request, reply) => void handleError(error, request, reply),
  });
  app.server.maxConnections = limits.maxConnections;
  app.setErrorHandler(handleError);
  // A refused caller's unread body would otherwise be drained from a kept-alive socket. The
  // same for any answer given before the body arrived (a 415, a 413): kept alive, the socket
  // would wait out the rest of that body and then answer it a second time, with a 408.
  app.addHook('onSend', async (request, reply) => {
    if (reply.statusCode === 401 || !request.raw.complete) reply.header('connection', 'close');
  });
  app.setNotFoundHandler((request, reply) =>
    reply.code(404).send({ error: `No route ${request.method} ${request.url.split('?')[0]}`, code: 'TL_NOT_FOUND' }),
  );
  // Before the routes it documents: swagger lists only routes added once it has loaded.
  registerOpenApi(app);
  app.after(() => {
    registerProbes(app, gateway, probes);
    for (const platform of platforms) platform.register(app, gateway);
  });
  return app;
}

/**
 * /v1/health answers 200 whenever the process serves HTTP, draining and with a failed store
 * included: a liveness probe that restarted it would cut the drain short and would not mend a
 * full disk. Its body says what is wrong. /v1/ready answers 200 only while intake is open and
 * the store answers within `storeTimeoutMs`; otherwise 503 with `{error, code}` (TL_STARTING,
 * TL_SHUTTING_DOWN, TL_STORE_FAILED), so traffic goes elsewhere until it is back.
 */
function registerProbes(app: FastifyInstance, gateway: Gateway, { storeTimeoutMs }: ProbeOptions): void {
  app.get('/v1/health', { schema: { tags: [HEALTH_TAG], summary: 'Alive: 200 while the process serves HTTP, draining included; the body says what is wrong' } }, async () => {
    const reading = await readHealth(gateway, storeTimeoutMs);
    if (reading.ok) return healthBody(reading.health);
    return {
      status: 'degraded',
      reasons: [`the store does not answer (${reading.failure.code}): ${reading.failure.message}`],
      queued: gateway.queued,
      outbox_pending: null,
      outbox_full_chats: null,
      deliveries: { ...gateway.outbox.stats(), mismatches: gateway.router.mismatches() },
    };
  });
  app.get('/v1/ready', { schema: { tags: [HEALTH_TAG], summary: 'Ready: 200 while intake is open and the store answers, else 503 {error, code}' } }, async (_request, reply) => {
    const reading = await readHealth(gateway, storeTimeoutMs);
    if (!reading.ok) return refuse(reply, reading.failure);
    const { status, reasons } = reading.health;
    const closed = notAccepting(status);
    return closed === undefined ? { status, reasons } : refuse(reply, closed);
  });
}

function refuse(reply: FastifyReply, error: ThreadlineError): FastifyReply {
  return reply.code(503).send({ error: error.message, code: error.code });
}

function healthBody(health: GatewayHealth) {
  return {
    status: health.status,
    reasons: health.reasons,
    queued: health.queued,
    outbox_pending: health.outbox.open,
    outbox_full_chats: health.outbox.fullChats,
    deliveries: health.deliveries,
  };
}

function notAccepting(status: GatewayHealth['status']): ThreadlineError | undefined {
  if (status === 'starting') return new ThreadlineError('TL_STARTING', 'The gateway is starting (replaying what an earlier process left) and takes no messages yet');
  if (status === 'stopping') return new ThreadlineError('TL_SHUTTING_DOWN', 'The gateway is stopping and takes no new messages');
  return undefined;
}

type HealthReading = { readonly ok: true; readonly health: GatewayHealth } | { readonly ok: false; readonly failure: ThreadlineError };

/** The gateway's health, or why the store did not give it within `timeoutMs`. */
async function readHealth(gateway: Gateway, timeoutMs: number): Promise<HealthReading> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new ThreadlineError('TL_STORE_FAILED', `The store did not answer within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    return { ok: true, health: await Promise.race([gateway.health(), expired]) };
  } catch (error) {
    if (error instanceof ThreadlineError && error.code === 'TL_STORE_FAILED') return { ok: false, failure: error };
    return { ok: false, failure: new ThreadlineError('TL_STORE_FAILED', `The store failed: ${messageOf(error)}`, { cause: error }) };
  } finally {
    clearTimeout(timer);
  }
}
