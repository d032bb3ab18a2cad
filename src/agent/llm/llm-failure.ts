import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import { ThreadlineError, messageOf } from '../../errors.js';
import { redactText } from '../../text/redact-secrets.js';

/** Longest provider detail quoted in an error message. */
const MAX_DETAIL_CHARS = 300;
/** OpenAI-style keys, which providers quote (masked or not) in their 401 answers. */
const API_KEY_SHAPE = /\bsk-[\w*.-]+/g;

/** What an error message must not reveal, and what helps the user act on it. */
export interface FailureContext {
  readonly apiKey: string | undefined;
  readonly timeoutMs: number;
}

/**
 * A failed model request as TL_LLM_FAILED, with a message that says what to check and never
 * holds the API key: the provider's own text is quoted with the key, key-shaped text and
 * URL secrets taken out. No `cause`: the package's error carries the provider's raw answer.
 */
export function llmFailure(error: unknown, context: FailureContext): ThreadlineError {
  if (error instanceof ThreadlineError) return error;
  return new ThreadlineError('TL_LLM_FAILED', describe(error, context));
}

/** `error.type` of the chat span: the HTTP status, or the client error's class, low-cardinality. */
export function llmErrorType(error: unknown): string {
  if (error instanceof ThreadlineError) return error.code;
  if (error instanceof APIError && error.status !== undefined) return String(error.status);
  if (error instanceof APIUserAbortError) return 'cancelled';
  if (error instanceof APIConnectionTimeoutError) return 'timeout';
  if (error instanceof APIConnectionError) return 'connection_error';
  return '_OTHER';
}

function describe(error: unknown, context: FailureContext): string {
  if (error instanceof APIUserAbortError) return 'The model request was cancelled: the turn was stopped';
  if (error instanceof APIConnectionTimeoutError) {
    return `The model endpoint did not answer within ${context.timeoutMs} ms (THREADLINE_LLM_TIMEOUT_MS)`;
  }
  if (error instanceof APIConnectionError) {
    const cause = error.cause === undefined ? '' : `: ${detail(messageOf(error.cause), context.apiKey)}`;
    return `The model endpoint (THREADLINE_LLM_BASE_URL) could not be reached${cause}`;
  }
  if (error instanceof APIError && error.status !== undefined) {
    const providerText = detail(error.message.replace(/^\d{3}\s*/, ''), context.apiKey);
    return `The model endpoint answered ${error.status}${providerText === '' ? '' : ` (${providerText})`}${hint(error.status)}`;
  }
  return `The model request failed: ${detail(messageOf(error), context.apiKey)}`;
}

function hint(status: number): string {
  if (status === 401 || status === 403) return '; check THREADLINE_LLM_API_KEY';
  if (status === 404) return '; check THREADLINE_LLM_MODEL and THREADLINE_LLM_BASE_URL';
  if (status === 429) return '; the provider is rate limiting, try again later';
  return '';
}

/** Text from elsewhere (the provider, the network stack), on one line, without secrets, bounded. */
function detail(text: string, apiKey: string | undefined): string {
  const line = withoutSecrets(text, apiKey).replace(/\s+/g, ' ').trim();
  return line.length <= MAX_DETAIL_CHARS ? line : `${line.slice(0, MAX_DETAIL_CHARS)}…`;
}

function withoutSecrets(text: string, apiKey: string | undefined): string {
  const keyless = apiKey === undefined || apiKey === '' ? text : text.split(apiKey).join('<redacted>');
  return redactText(keyless.replace(API_KEY_SHAPE, 'sk-<redacted>'));
}
