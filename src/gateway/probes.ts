import type { FastifyInstance, FastifyReply } from 'fastify';
import { ThreadlineError, messageOf } from '../errors.js';
import type { Gateway, GatewayHealth } from './gateway.js';
import { HEALTH_TAG } from './openapi.js';

/** Under the one second Kubernetes gives a probe by default, so a stuck store fails readiness with an answer. */
export const PROBE_STORE_TIMEOUT_MS = 800;

export interface ProbeOptions {
  /** How long /v1/health and /v1/ready wait for the store before they say it failed. */
  readonly storeTimeoutMs: number;
}

/**
 * /v1/health answers 200 whenever the process serves HTTP, draining and with a failed store
 * included: a liveness probe that restarted it would cut the drain short and would not mend a
 * full disk. Its body says what is wrong. /v1/ready answers 200 only while intake is open, the
 * store answers within `storeTimeoutMs` and takes writes (from a write that failed until one
 * succeeds: a full disk refuses writes while it still answers reads), and intake does not
 * refuse everything; otherwise 503 with `{error, code}` (TL_STARTING, TL_SHUTTING_DOWN,
 * TL_STORE_FAILED, TL_REDIS_UNSUITABLE), so traffic goes elsewhere until it is back.
 */
export function registerProbes(app: FastifyInstance, gateway: Gateway, { storeTimeoutMs }: ProbeOptions): void {
  const health = new HealthReads(gateway, storeTimeoutMs);
  app.get('/v1/health', { schema: { tags: [HEALTH_TAG], summary: 'Alive: 200 while the process serves HTTP, draining included; the body says what is wrong' } }, async () => {
    const reading = await health.read();
    if (reading.ok) return healthBody(reading.health, reading.writeFailure);
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
    const reading = await health.read();
    if (!reading.ok) return refuse(reply, reading.failure);
    if (reading.writeFailure !== undefined) return refuse(reply, writesRefused(reading.writeFailure));
    const { status, reasons, refusal } = reading.health;
    const closed = notAccepting(status) ?? refusal;
    return closed === undefined ? { status, reasons } : refuse(reply, closed);
  });
}

/** The gateway's health and, while the store refuses writes, why; or why the store did not answer at all. */
type HealthReading =
  | { readonly ok: true; readonly health: GatewayHealth; readonly writeFailure: ThreadlineError | undefined }
  | { readonly ok: false; readonly failure: ThreadlineError };

type Reading = { readonly health: GatewayHealth; readonly writeFailure: ThreadlineError | undefined };

/**
 * The gateway's health as the probes read it, each within `timeoutMs`. Probes share the one
 * query under way: against a hung store each would otherwise leave its own query queued.
 */
class HealthReads {
  /** The query under way, until it settles; only then does a probe ask the store again. */
  private inFlight: Promise<Reading> | undefined;

  constructor(
    private readonly gateway: Gateway,
    private readonly timeoutMs: number,
  ) {}

  /** The gateway's health, or why the store did not give it within the timeout. */
  async read(): Promise<HealthReading> {
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => reject(new ThreadlineError('TL_STORE_FAILED', `The store did not answer within ${this.timeoutMs} ms`)), this.timeoutMs);
    });
    try {
      return { ok: true, ...(await Promise.race([this.query(), expired])) };
    } catch (error) {
      if (error instanceof ThreadlineError && error.code === 'TL_STORE_FAILED') return { ok: false, failure: error };
      return { ok: false, failure: new ThreadlineError('TL_STORE_FAILED', `The store failed: ${messageOf(error)}`, { cause: error }) };
    } finally {
      clearTimeout(timer);
    }
  }

  private query(): Promise<Reading> {
    this.inFlight ??= Promise.all([this.gateway.health(), this.gateway.storeWriteFailure()])
      .then(([health, writeFailure]) => ({ health, writeFailure }))
      .finally(() => {
        this.inFlight = undefined;
      });
    return this.inFlight;
  }
}

function refuse(reply: FastifyReply, error: ThreadlineError): FastifyReply {
  return reply.code(503).send({ error: error.message, code: error.code });
}

/** What readiness answers while the store refuses writes. */
function writesRefused(failure: ThreadlineError): ThreadlineError {
  return new ThreadlineError(failure.code, `${failure.message}; ready again once a write succeeds`);
}

function healthBody(health: GatewayHealth, writeFailure: ThreadlineError | undefined) {
  const refused = writeFailure === undefined ? [] : [`the store refuses writes (${writeFailure.code}): ${writeFailure.message}; /v1/ready answers 503 until one succeeds`];
  return {
    status: refused.length > 0 && health.status === 'ok' ? 'degraded' : health.status,
    reasons: [...health.reasons, ...refused],
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
