/**
 * Every error threadline raises on purpose has a code from this table. The table is the
 * single place that says what a code means, which HTTP status it maps to at the edge, and
 * what the operator should do; a test checks that each code is documented in the README.
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
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

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
