import Fastify, { type FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Platform } from '../platforms/platform.js';
import type { Gateway } from './gateway.js';
import { errorHandler } from './http-errors.js';

const MAX_BODY_BYTES = 64 * 1024;

/**
 * The HTTP face: each platform registers its inbound routes; /v1/health reports queue and
 * outbox depth, and why intake refuses messages when it does. Ajv is strict: no type
 * coercion and no silent removal of unknown fields, so a malformed body is a 400 that names
 * the field, never a guess.
 */
export function buildServer(gateway: Gateway, platforms: readonly Platform[], logger: Logger): FastifyInstance {
  const app = Fastify({
    bodyLimit: MAX_BODY_BYTES,
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, useDefaults: false } },
    // Keep-alive connections from load balancers and benchmarks outlive a short default.
    keepAliveTimeout: 65_000,
  });
  app.setErrorHandler(errorHandler(logger));
  app.setNotFoundHandler((request, reply) =>
    reply.code(404).send({ error: `No route ${request.method} ${request.url.split('?')[0]}`, code: 'TL_NOT_FOUND' }),
  );
  app.get('/v1/health', async () => {
    const health = await gateway.health();
    return {
      status: health.status,
      reasons: health.reasons,
      queued: health.queued,
      outbox_pending: health.outbox.open,
      outbox_full_chats: health.outbox.fullChats,
      deliveries: health.deliveries,
    };
  });
  for (const platform of platforms) platform.register(app, gateway);
  return app;
}
