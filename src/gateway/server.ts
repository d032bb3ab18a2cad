import Fastify, { type FastifyInstance, type onResponseHookHandler } from 'fastify';
import type { Logger } from 'pino';
import type { Platform } from '../platforms/platform.js';
import type { GatewayMetrics } from '../telemetry/gateway-metrics.js';
import type { Gateway } from './gateway.js';
import type { HttpLimits } from './gateway-config.js';
import { clientErrorHandler, errorHandler } from './http-errors.js';
import { registerOpenApi } from './openapi.js';
import { PROBE_STORE_TIMEOUT_MS, registerProbes, type ProbeOptions } from './probes.js';

const MAX_BODY_BYTES = 64 * 1024;

/**
 * The HTTP face: each platform registers its inbound routes; /v1/health (alive) and /v1/ready
 * (takes messages) are the probes (probes.ts). Ajv is strict: no type coercion and no silent
 * removal of unknown fields, so a malformed body is a 400 that names the field, never a guess. Every client is bounded (see HttpLimits): a slow or silent one is
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
    // Failures of fastify's router (a path that cannot be percent-decoded): the usual handler,
    // and timed here, as no onResponse hook runs for them.
    frameworkErrors: (error, request, reply) => {
      reply.raw.once('finish', () => gateway.metrics.httpRequest(request.method, reply.statusCode, undefined, request.protocol, reply.elapsedTime / 1000));
      void handleError(error, request, reply);
    },
  });
  app.server.maxConnections = limits.maxConnections;
  app.setErrorHandler(handleError);
  // A refused caller's unread body would otherwise be drained from a kept-alive socket. The
  // same for any answer given before the body arrived (a 415, a 413): kept alive, the socket
  // would wait out the rest of that body and then answer it a second time, with a 408.
  app.addHook('onSend', async (request, reply) => {
    if (reply.statusCode === 401 || !request.raw.complete) reply.header('connection', 'close');
  });
  recordRequestDurations(app, gateway.metrics);
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
 * http.server.request.duration for every answer: a route's requests by a hook that holds its
 * template, so nothing per request is looked up or allocated but the attributes; those no
 * route matched (404s) by one global hook; undecodable paths by frameworkErrors.
 */
function recordRequestDurations(app: FastifyInstance, metrics: GatewayMetrics): void {
  app.addHook('onRoute', (route) => {
    const template = route.url;
    const record: onResponseHookHandler = (request, reply, done) => {
      metrics.httpRequest(request.method, reply.statusCode, template, request.protocol, reply.elapsedTime / 1000);
      done();
    };
    route.onResponse = route.onResponse === undefined ? [record] : [...[route.onResponse].flat(), record];
  });
  app.addHook('onResponse', (request, reply, done) => {
    if (request.is404) metrics.httpRequest(request.method, reply.statusCode, undefined, request.protocol, reply.elapsedTime / 1000);
    done();
  });
}
