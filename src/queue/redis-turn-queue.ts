import { randomUUID } from 'node:crypto';
import { SpanKind, trace } from '@opentelemetry/api';
import { Queue, WaitingError, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { ThreadlineError } from '../errors.js';
import type { RunTurn, TurnJob, TurnQueue } from '../gateway/turn-queue.js';
import { recordFailure, requireSession, runDetached } from '../session/index.js';
import { redisFailure } from '../store/redis/redis-connection.js';
import type { RedisKeys } from '../store/redis/redis-keys.js';
import { threadlineTracer } from '../telemetry/tracer.js';
import { parseInboundJobData, type InboundJobData } from './inbound-job-data.js';
import { inboundJobId } from './inbound-job-id.js';
import { consumerContext, jobContextOf } from './job-context.js';
import { keptAWeek, leaseWorkerOptions, logWorkerErrors, type LeaseTimings } from './lease-worker-options.js';
import { partitionOf } from './partition.js';
import { decodeTurnAbort, encodeTurnAbort } from './turn-abort-message.js';

export interface RedisTurnQueueOptions extends LeaseTimings {
  /** A new ioredis connection for BullMQ (maxRetriesPerRequest null); each one asked for is closed by close(). */
  readonly connection: () => Redis;
  readonly keys: RedisKeys;
  /** THREADLINE_PARTITIONS: inbound queues; a session's messages all go to one. */
  readonly partitions: number;
  /** THREADLINE_WORKERS includes turns: this instance runs turns; otherwise it only queues them. */
  readonly work: boolean;
  readonly logger: Logger;
  /** How long an offer or an abort broadcast waits for Redis before it is reported unavailable; default 5 s. */
  readonly commandTimeoutMs?: number;
  /** After a Redis error, how long a worker waits before it fetches again (and close() may wait as long). BullMQ's default 15 s. */
  readonly retryDelayMs?: number;
}

/** A turn running here: what /stop and close() abort. */
interface RunningTurn {
  readonly sessionId: string;
  readonly controller: AbortController;
}

const tracer = threadlineTracer();
const DEFAULT_COMMAND_TIMEOUT_MS = 5_000;
/** Completed jobs are kept a day (bounded): a replayed offer of a message that ran is then a no-op. */
const REMOVE_ON_COMPLETE = { age: 86_400, count: 10_000 } as const;
/** Failed jobs are messages whose data was damaged: kept a week to be looked at, bounded. */
const REMOVE_ON_FAIL = keptAWeek(10_000);

/**
 * The distributed gateway's turn queue: accepted messages wait in Redis, in BullMQ partition
 * queues `inbound-<p>` (p from the session key), each run one job at a time across every
 * instance (global concurrency 1), so a session's turns run in order wherever they run. Any
 * instance offers; instances with `work` run turns. A turn cut short by close() goes back to
 * the front of its partition and runs next elsewhere; one whose instance died does the same
 * once its lock expires.
 */
export class RedisTurnQueue implements TurnQueue {
  /** Told apart from other instances on the abort channel. */
  private readonly instance = randomUUID();
  private readonly connections: Redis[] = [];
  private readonly queues = new Map<number, Queue>();
  private readonly workers: Worker[] = [];
  private readonly running = new Map<string, RunningTurn>();
  /** Processors not yet returned (handing back included): close() waits for them. */
  private readonly processing = new Set<Promise<unknown>>();
  private producer: Redis | undefined;
  private offers = 0;
  /** Set by idle() and close(): a job fetched after it goes straight back to its partition. */
  private draining = false;
  /** Set by close(): a turn aborted now goes back to its partition instead of completing. */
  private closing = false;
  private idleWaiters: (() => void)[] = [];

  constructor(private readonly options: RedisTurnQueueOptions) {}

  /** Turns running here plus offers on their way to Redis. */
  get size(): number {
    return this.running.size + this.offers;
  }

  /** With `work`: one worker per partition, one turn at a time per partition across all instances. */
  async start(run: RunTurn): Promise<void> {
    if (!this.options.work) return;
    try {
      const subscriber = this.connect();
      subscriber.on('message', (channel: string, payload: string) => {
        if (channel === this.abortChannel) this.onAbortMessage(payload);
      });
      await subscriber.subscribe(this.abortChannel);
      const workerConnection = this.connect();
      for (let index = 0; index < this.options.partitions; index++) {
        await this.queue(index).setGlobalConcurrency(1);
        this.workers.push(this.startWorker(index, workerConnection, run));
      }
    } catch (error) {
      throw redisFailure(error);
    }
  }

  /** Adds the message to its session's partition (once: the job id is the message's) and ends its span. */
  async offer(job: TurnJob): Promise<void> {
    const partition = partitionOf(job.key, this.options.partitions);
    const queueName = this.options.keys.inboundQueue(partition);
    this.offers++;
    try {
      const data: InboundJobData = { id: job.id, key: job.key, text: job.text, context: jobContextOf(job.context, job.routing) };
      const queue = this.queue(partition);
      await this.withinTimeout(
        queue.add('turn', data, { jobId: inboundJobId(job.id), attempts: 1, removeOnComplete: REMOVE_ON_COMPLETE, removeOnFail: REMOVE_ON_FAIL }),
        'queue the message',
      );
      job.span.setAttribute('messaging.destination.name', queueName);
    } catch (error) {
      const failure = redisFailure(error);
      recordFailure(job.span, failure);
      throw failure;
    } finally {
      // The turn runs in a span of its own, possibly on another instance: this one is handed over.
      job.span.end();
      this.offers--;
      this.settleIdle();
    }
  }

  /** Aborts the session's turn running here; otherwise tells the other instances to abort it. */
  async abort(sessionId: string, reason: string): Promise<boolean> {
    if (this.abortHere(sessionId, reason)) return true;
    try {
      await this.withinTimeout(this.commands().publish(this.abortChannel, encodeTurnAbort({ sessionId, reason, from: this.instance })), 'broadcast /stop');
    } catch (error) {
      // /stop's own message still queues and runs; failing its intake for the broadcast would lose it.
      this.options.logger.warn({ err: redisFailure(error), session: sessionId }, 'could not tell other instances to abort a turn');
    }
    return false;
  }

  /** Takes no more jobs from now on (another instance takes them) and resolves once nothing runs here. */
  async idle(): Promise<void> {
    this.draining = true;
    // Without waiting for their jobs: the wait is ours (settleIdle), and another instance may take what waits.
    await Promise.all(this.workers.map((worker) => worker.pause(true)));
    if (this.size === 0) return;
    await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
  }

  /**
   * Takes no more jobs, aborts the turns running here and hands each back to the front of its
   * partition (neither completed nor failed), then closes the workers and connections.
   */
  async close(reason: string): Promise<void> {
    this.draining = true;
    this.closing = true;
    await Promise.all(this.workers.map((worker) => worker.pause(true)));
    for (const turn of this.running.values()) turn.controller.abort(new Error(reason));
    await Promise.allSettled([...this.processing]);
    await Promise.allSettled(this.workers.map((worker) => worker.close()));
    await Promise.allSettled([...this.queues.values()].map((queue) => queue.close()));
    for (const connection of this.connections) connection.disconnect();
  }

  private get abortChannel(): string {
    return this.options.keys.key('abort');
  }

  private startWorker(index: number, connection: Redis, run: RunTurn): Worker {
    const queueName = this.options.keys.inboundQueue(index);
    const worker = new Worker(
      queueName,
      // Detached: BullMQ's loop runs in whatever context started it; the turn brings its own.
      (job: Job, token?: string) => runDetached(() => this.track(this.process(queueName, job, token, run))),
      {
        connection,
        prefix: this.options.keys.queuePrefix,
        concurrency: 1,
        ...leaseWorkerOptions(this.options),
        ...(this.options.retryDelayMs === undefined ? {} : { runRetryDelay: this.options.retryDelayMs }),
      },
    );
    logWorkerErrors(worker, this.options.logger, 'inbound queue');
    // Its lock lapsed (cut off from Redis past the lease): another instance runs the turn now, so this one stops.
    worker.on('lockRenewalFailed', (jobIds) => {
      for (const jobId of jobIds) {
        const running = this.running.get(jobId);
        if (running === undefined) continue;
        this.options.logger.warn({ queue: queueName, job: jobId }, 'a turn lost its lock in Redis; another instance runs it, this one is aborted');
        running.controller.abort(new Error('the turn lost its lock: another instance runs it'));
      }
    });
    // Never the text: the job id names the message, the store has the rest.
    worker.on('failed', (job, error) =>
      this.options.logger.error({ err: error, queue: queueName, job: job?.id }, 'inbound job is unusable; it stays in its queue as a failed job'),
    );
    return worker;
  }

  /** Runs one job's turn; hands the job back to the front of its partition when this instance is stopping. */
  private async process(queueName: string, job: Job, token: string | undefined, run: RunTurn): Promise<void> {
    if (this.draining) return this.handBack(job, token);
    // Damaged data or snapshot: thrown, so the job fails and stays as a dead letter (the 'failed' log).
    const data = parseInboundJobData(job.data);
    const consumer = consumerContext(data.context);
    const span = tracer.startSpan(
      'gateway.turn',
      {
        kind: SpanKind.CONSUMER,
        links: consumer.links,
        attributes: {
          'messaging.system': 'threadline',
          'messaging.operation.type': 'process',
          'messaging.destination.name': queueName,
          'messaging.message.id': data.id,
        },
      },
      consumer.context,
    );
    const context = trace.setSpan(consumer.context, span);
    const session = requireSession(context);
    const controller = new AbortController();
    const runningKey = job.id ?? data.id;
    this.running.set(runningKey, { sessionId: session.sessionId, controller });
    try {
      // run() ends the span.
      await run({ id: data.id, sessionId: session.sessionId, session, key: data.key, text: data.text, context, span, routing: data.context.routing }, controller.signal);
    } finally {
      this.running.delete(runningKey);
      this.settleIdle();
    }
    // As the gateway leaves such a message pending in the store, the queue keeps it waiting.
    if (this.closing && controller.signal.aborted) return this.handBack(job, token);
  }

  /**
   * Puts an active job back at the front of its partition (moveJobFromActiveToWait RPUSHes),
   * neither completed nor failed. Throws WaitingError, which tells BullMQ it moved.
   */
  private async handBack(job: Job, token: string | undefined): Promise<never> {
    try {
      await job.moveToWait(token);
    } catch (error) {
      // Its lock then expires and another instance's stalled check puts it back at the front all the same.
      this.options.logger.warn({ err: redisFailure(error), job: job.id }, 'could not hand an inbound job back; it runs elsewhere once its lock expires');
    }
    throw new WaitingError();
  }

  private track<T>(work: Promise<T>): Promise<T> {
    this.processing.add(work);
    const forget = (): void => {
      this.processing.delete(work);
    };
    work.then(forget, forget);
    return work;
  }

  private onAbortMessage(payload: string): void {
    const message = decodeTurnAbort(payload);
    if (message === undefined) {
      this.options.logger.warn({ channel: this.abortChannel }, 'ignored a message on the abort channel that is not an abort');
      return;
    }
    if (message.from !== this.instance) this.abortHere(message.sessionId, message.reason);
  }

  private abortHere(sessionId: string, reason: string): boolean {
    let found = false;
    for (const turn of this.running.values()) {
      if (turn.sessionId !== sessionId) continue;
      turn.controller.abort(new Error(reason));
      found = true;
    }
    return found;
  }

  private settleIdle(): void {
    if (this.size > 0) return;
    for (const resolve of this.idleWaiters.splice(0)) resolve();
  }

  private queue(index: number): Queue {
    let queue = this.queues.get(index);
    if (queue === undefined) {
      queue = new Queue(this.options.keys.inboundQueue(index), { connection: this.commands(), prefix: this.options.keys.queuePrefix });
      queue.on('error', (error) => this.options.logger.warn({ err: redisFailure(error), queue: queue!.name }, 'inbound queue error'));
      this.queues.set(index, queue);
    }
    return queue;
  }

  /** The connection for producing and publishing, shared by every partition's queue. */
  private commands(): Redis {
    this.producer ??= this.connect();
    return this.producer;
  }

  private connect(): Redis {
    const connection = this.options.connection();
    this.connections.push(connection);
    return connection;
  }

  /** `work`, or TL_REDIS_UNAVAILABLE once `commandTimeoutMs` passes: a command waits for Redis forever otherwise. */
  private withinTimeout<T>(work: Promise<T>, what: string): Promise<T> {
    const timeoutMs = this.options.commandTimeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new ThreadlineError('TL_REDIS_UNAVAILABLE', `Redis did not answer within ${timeoutMs} ms to ${what}: check that it is running and reachable`)),
        timeoutMs,
      );
    });
    return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
  }
}
