import { Redis, type RedisOptions } from 'ioredis';
import { messageOf, ThreadlineError } from '../../errors.js';
import { redactRedisUrl } from '../../config/redis-url.js';
import { redactText } from '../../text/redact-secrets.js';

/** Shown wherever a Redis URL is: the password masked. */
export { redactRedisUrl };

/** How long a connection, its AUTH and its ready check may take at start-up. */
const DEFAULT_CONNECT_TIMEOUT_MS = 5_000;
/** Reconnect delays grow to this: Redis back after an outage is found within a second. */
const MAX_RECONNECT_DELAY_MS = 1_000;
/** Our own commands wait out this many reconnects, then fail: a brief blip passes, an outage is reported. */
const COMMAND_RETRIES = 2;
/** The longest one of our commands may wait for its answer. */
const COMMAND_TIMEOUT_MS = 5_000;
/** TCP keep-alive probes find a silently dead connection in seconds, not the OS default hours. */
const KEEP_ALIVE_MS = 10_000;

export interface ConnectRedisOptions {
  /** Connect, authenticate and answer the ready check within this; default 5 s. */
  readonly connectTimeoutMs?: number;
  /** For BullMQ (queues and workers): commands wait for Redis however long it is away, as BullMQ requires. */
  readonly forQueues?: boolean;
  /**
   * Told every connection error after start-up (the client reconnects by itself); commands
   * fail on their own, so this is for a log line. Its message is already redacted.
   */
  readonly onError?: (error: ThreadlineError) => void;
}

/**
 * A connected ioredis client for `url`, or TL_REDIS_UNAVAILABLE saying why not (refused, no
 * such host, no answer in time, AUTH refused) with the URL's password masked. Once connected
 * it reconnects in the background whenever Redis goes away.
 */
export async function connectRedis(url: string, options: ConnectRedisOptions = {}): Promise<Redis> {
  const connectTimeout = options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
  const where = redactRedisUrl(url);
  const redisOptions: RedisOptions = {
    lazyConnect: true,
    connectTimeout,
    // BullMQ's blocking workers must never have a command given up; our own must fail fast.
    maxRetriesPerRequest: options.forQueues === true ? null : COMMAND_RETRIES,
    retryStrategy: (attempt) => Math.min(attempt * 100, MAX_RECONNECT_DELAY_MS),
    // A replica promoted away from under us answers READONLY: reconnect, to whatever the URL names now.
    reconnectOnError: (error) => error.message.startsWith('READONLY'),
    ...(options.forQueues === true
      ? {}
      : {
          // Our scripts are not idempotent: one whose reply was lost is reported, never sent again.
          autoResendUnfulfilledCommands: false,
          // A Redis that hangs (paused, a cut without a reset) fails the command: intake answers 503, not never.
          commandTimeout: COMMAND_TIMEOUT_MS,
          keepAlive: KEEP_ALIVE_MS,
        }),
  };
  let client: Redis;
  try {
    client = new Redis(url, redisOptions);
  } catch (error) {
    // ioredis parses the URL itself; its complaint could quote it, so only the masked form is shown.
    throw new ThreadlineError('TL_REDIS_UNAVAILABLE', `Cannot use Redis at ${where}: fix THREADLINE_REDIS_URL`, { cause: error });
  }
  try {
    await firstReady(client, connectTimeout);
  } catch (error) {
    // Late errors of the half-open client (a reconnect under way) must not reach the console.
    client.on('error', () => undefined);
    client.disconnect();
    throw new ThreadlineError('TL_REDIS_UNAVAILABLE', `Cannot reach Redis at ${where} (${reasonOf(error)}): start it, or fix THREADLINE_REDIS_URL`, {
      cause: error,
    });
  }
  // Without a listener ioredis prints every reconnect failure to the console itself.
  client.on('error', (error: unknown) => options.onError?.(redisFailure(error)));
  return client;
}

/** Resolves once the client is ready; rejects on its first error, or when `timeoutMs` passes first. */
function firstReady(client: Redis, timeoutMs: number): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const settle = (error?: unknown): void => {
      clearTimeout(timer);
      client.off('ready', onReady);
      client.off('error', onError);
      if (error === undefined) resolve();
      else reject(error instanceof Error ? error : new Error(String(error)));
    };
    const onReady = (): void => settle();
    // The first failure decides: retrying a refused port for the whole timeout tells nobody anything.
    const onError = (error: unknown): void => settle(error);
    const timer = setTimeout(() => settle(Object.assign(new Error(`no answer within ${timeoutMs} ms`), { code: 'ETIMEDOUT' })), timeoutMs);
    client.once('ready', onReady);
    client.on('error', onError);
    // Its failure also arrives as an 'error' event, handled above.
    client.connect().catch(() => undefined);
  });
}

/**
 * What a command against Redis threw, as TL_REDIS_UNAVAILABLE (503 at an HTTP edge): Redis
 * went away, refused the command (out of memory, read-only replica) or gave no answer. The
 * original error is kept as the cause; a ThreadlineError passes through unchanged.
 */
export function redisFailure(error: unknown): ThreadlineError {
  if (error instanceof ThreadlineError) return error;
  return new ThreadlineError('TL_REDIS_UNAVAILABLE', `Redis failed a command (${reasonOf(error)}): check that it is running and reachable`, {
    cause: error,
  });
}

/** The system error code when there is one (ECONNREFUSED, ENOTFOUND, ETIMEDOUT), else the message; never a URL's secrets. */
function reasonOf(error: unknown): string {
  const code = (error as { code?: unknown } | undefined)?.code;
  const message = redactText(messageOf(error));
  if (typeof code !== 'string' || code === '') return message;
  return message.includes(code) ? code : `${code}: ${message}`;
}
