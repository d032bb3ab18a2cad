/**
 * Every error threadline raises on purpose has a code from this table. The table is the
 * single place that says what a code means, which HTTP status it maps to at the edge, and
 * what the operator should do; a test checks that each code is documented in docs/errors.md.
 */
export const ERROR_CODES = {
  TL_SESSION_INVALID: {
    status: 400,
    summary: 'A session routing field is missing, of the wrong type, too long, or holds control characters.',
  },
  TL_SESSION_MISSING: {
    status: 500,
    summary: 'Code that needs the current session ran outside any session.',
  },
  TL_SNAPSHOT_INVALID: {
    status: 400,
    summary: 'A captured routing snapshot or carrier could not be decoded or failed validation.',
  },
  TL_ENV_NAME_UNKNOWN: {
    status: 500,
    summary: 'sessionEnv() was asked for a name that is not a THREADLINE_SESSION_* variable.',
  },
  TL_NO_CONTEXT_MANAGER: {
    status: 500,
    summary: 'No working OpenTelemetry context manager is registered, so routing cannot propagate.',
  },
  TL_CONFIG_INVALID: {
    status: 500,
    summary: 'A configuration variable has a value threadline cannot use.',
  },
  TL_NOT_FOUND: {
    status: 404,
    summary: 'No route for this method and path.',
  },
  TL_INTERNAL: {
    status: 500,
    summary: 'An unexpected failure; the response carries no detail, the log and the trace do.',
  },
  TL_BAD_REQUEST: {
    status: 400,
    summary: 'The request body is not JSON or does not match the schema; the message names the field.',
  },
  TL_UNAUTHORIZED: {
    status: 401,
    summary: 'The bearer token, secret token or request signature is missing or wrong.',
  },
  TL_PAYLOAD_TOO_LARGE: {
    status: 413,
    summary: 'The request body is over the 64 KiB limit.',
  },
  TL_REQUEST_TIMEOUT: {
    status: 408,
    summary:
      'The request did not arrive in time: headers within THREADLINE_HTTP_HEADERS_TIMEOUT_MS, the whole request within THREADLINE_HTTP_REQUEST_TIMEOUT_MS; the connection is closed.',
  },
  TL_INTAKE_FULL: {
    status: 429,
    summary: 'The intake queue is full; retry after the number of seconds in Retry-After.',
  },
  TL_STARTING: {
    status: 503,
    summary: 'The gateway is starting (replaying what an earlier process left) and takes no messages yet; retry in a moment.',
  },
  TL_CHAT_BACKLOG_FULL: {
    status: 429,
    summary: "This chat's deliveries not yet sent are at THREADLINE_OUTBOX_MAX_PER_CHAT (its target is down or slow); retry after Retry-After.",
  },
  TL_OUTBOX_FULL: {
    status: 503,
    summary: 'The deliveries not yet sent, across all chats, are at THREADLINE_OUTBOX_MAX_PENDING; retry after Retry-After.',
  },
  TL_IDEMPOTENCY_CONFLICT: {
    status: 422,
    summary: 'An Idempotency-Key or message_id was sent again with a different message; a new message needs a new key.',
  },
  TL_DATA_DIR_LOCKED: {
    status: 409,
    summary: "Another gateway holds the data directory's lock; the message names the directory and its pid.",
  },
  TL_LISTEN_FAILED: {
    status: 500,
    summary: 'The gateway could not listen on HOST:PORT (in use by another process, or not allowed); nothing was replayed.',
  },
  TL_SHUTTING_DOWN: {
    status: 503,
    summary: 'The gateway is stopping and takes no new messages; retry against another instance or later.',
  },
  TL_NOT_ADMIN: {
    status: 403,
    summary: 'An admin action (/sethome) was asked for by a sender not in THREADLINE_ADMINS; the gateway refuses it whoever the agent is.',
  },
  TL_FORBIDDEN: {
    status: 403,
    summary:
      "The operator's page refused: no THREADLINE_ADMIN_TOKEN is set and the client is not on loopback (or came through a proxy), or a form was posted without its CSRF proof or from another origin.",
  },
  TL_TARGET_INVALID: {
    status: 400,
    summary: 'A delivery target is not origin, home or platform:chat[:thread], or names an unknown platform.',
  },
  TL_HOME_UNSET: {
    status: 409,
    summary: 'A delivery went to the home channel of a platform that has none; send /sethome in the chat first.',
  },
  TL_MISROUTE_REFUSED: {
    status: 500,
    summary: 'Strict routing (THREADLINE_STRICT_ROUTING, on by default) refused a delivery whose destination differs from its origin routing; it is kept as a dead letter.',
  },
  TL_DELIVERY_REJECTED: {
    status: 502,
    summary: 'The platform refused a delivery for good (a 4xx other than 429); it is kept as failed, not retried.',
  },
  TL_STORE_FAILED: {
    status: 503,
    summary: 'The store could not be opened, refused a write, or was used after it closed; the message says which, the log where (a path stays out of HTTP answers). Readiness is 503 from a refused write until one succeeds.',
  },
  TL_DELIVERY_FAILED: {
    status: 502,
    summary: 'A delivery attempt failed for now (network, 5xx, 429); it stays in the outbox and is retried.',
  },
  TL_TOOL_INPUT: {
    status: 400,
    summary: 'A tool or command was given input it cannot use (a bad cron expression, an absurd interval, an unknown command); the message says what is expected.',
  },
  TL_TOOL_DISABLED: {
    status: 403,
    summary: 'The tool is off in this gateway (the terminal without THREADLINE_TERMINAL=1).',
  },
  TL_TOOL_LIMIT: {
    status: 429,
    summary: 'A chat, or the gateway, has as many background commands or scheduled jobs as its cap allows; end or remove one first.',
  },
  TL_TOOL_UNAVAILABLE: {
    status: 503,
    summary: 'A tool needs a program this host lacks (espeak-ng, opusenc); the message names it and how to install it.',
  },
  TL_TOOL_FAILED: {
    status: 500,
    summary: 'A tool failed while running; the message says how, and its execute_tool span holds the error.',
  },
  TL_LLM_FAILED: {
    status: 502,
    summary: 'The model endpoint (THREADLINE_LLM_BASE_URL) refused or failed a request; the turn is answered with the trace id.',
  },
  TL_TRACE_SOURCE: {
    status: 502,
    summary: 'The forensics commands could not read a trace store (Jaeger, Tempo, the trace file): refused, failed, or answered with something that is not traces.',
  },
  TL_REDIS_UNAVAILABLE: {
    status: 503,
    summary: 'The shared backend (THREADLINE_REDIS_URL) cannot be reached or refused a command; intake answers 503 until it is back.',
  },
  TL_REDIS_UNSUITABLE: {
    status: 503,
    summary:
      'The Redis at THREADLINE_REDIS_URL may lose accepted work (an evicting maxmemory-policy) or was set up for another partition count; the gateway refuses to start on it, and a running one that finds it so is not ready and refuses messages until it is fixed.',
  },
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

/** What a caught value says, for a log line or a wrapping error's message. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Base of all typed threadline errors: `code` is stable, `message` says what to do. */
export class ThreadlineError extends Error {
  readonly code: ErrorCode;
  /** The HTTP status this error maps to when it reaches an HTTP edge. */
  readonly statusCode: number;

  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ThreadlineError';
    this.code = code;
    this.statusCode = ERROR_CODES[code].status;
  }
}

/** A session field failed validation; `field` names it so callers can report it. */
export class SessionFieldError extends ThreadlineError {
  readonly field: string;

  constructor(field: string, reason: string) {
    super('TL_SESSION_INVALID', `Invalid session field "${field}": ${reason}`);
    this.name = 'SessionFieldError';
    this.field = field;
  }
}

/** A configuration variable is unusable; `variable` names it. */
export class ConfigError extends ThreadlineError {
  readonly variable: string;

  constructor(variable: string, reason: string) {
    super('TL_CONFIG_INVALID', `Invalid ${variable}: ${reason}`);
    this.name = 'ConfigError';
    this.variable = variable;
  }
}

/** A delivery attempt failed; `retryable` says whether the outbox tries again. */
export class DeliveryError extends ThreadlineError {
  readonly retryable: boolean;
  /** The wait the platform asked for (Retry-After), in milliseconds. */
  readonly retryAfterMs: number | undefined;

  constructor(message: string, options: { retryable: boolean; retryAfterMs?: number | undefined; cause?: unknown }) {
    super(options.retryable ? 'TL_DELIVERY_FAILED' : 'TL_DELIVERY_REJECTED', message, { cause: options.cause });
    this.name = 'DeliveryError';
    this.retryable = options.retryable;
    this.retryAfterMs = options.retryAfterMs;
  }
}

/** A request that failed before any answer (refused, reset, timed out) is worth retrying. */
export function networkFailure(error: unknown, what: string): DeliveryError {
  if (error instanceof DeliveryError) return error;
  return new DeliveryError(`${what} could not be reached: ${messageOf(error)}`, { retryable: true, cause: error });
}

/** An HTTP error answer: 5xx and 429 are worth retrying (after Retry-After), other 4xx are final. */
export function answerFailure(status: number, retryAfter: string | undefined, detail: string, what: string): DeliveryError {
  return new DeliveryError(`${what} answered ${status}${detail ? `: ${detail}` : ''}`, {
    retryable: status >= 500 || status === 429,
    retryAfterMs: retryAfterMs(retryAfter),
  });
}

/** Retry-After as seconds or an HTTP date (RFC 9110 section 10.2.3), in milliseconds. */
export function retryAfterMs(header: string | undefined): number | undefined {
  if (header === undefined) return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(header);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}
