import { ThreadlineError, messageOf } from '../errors.js';
import { byteSize } from '../text/byte-size.js';
import { redactText, safeUrl } from '../text/redact-secrets.js';
import type { ReadBudget } from './read-budget.js';

/** How a trace store is asked, and named in messages. */
export interface HttpGetOptions {
  /** Names the store in messages, without secrets: `jaeger http://…`. */
  readonly what: string;
  /** No answer (headers and body) within this long is an error; 10 s unless given. */
  readonly timeoutMs?: number;
  /** A body larger than this is refused; 64 MiB unless given. */
  readonly maxBytes?: number;
  /** Shared by several requests: each body's bytes count against it, and a read past it is abandoned. */
  readonly budget?: ReadBudget;
  readonly headers?: Readonly<Record<string, string>>;
}

/** An answer of any status, its body read as text. */
export interface HttpAnswer {
  readonly status: number;
  readonly contentType: string;
  readonly text: string;
}

/** A JSON answer; `body` is undefined only for an accepted status that came with an empty body. */
export interface JsonAnswer {
  readonly status: number;
  readonly body: unknown;
}

export interface GetJsonOptions extends HttpGetOptions {
  /** Statuses other than 2xx the caller tells apart itself (a 404 for "not found"): returned, not thrown. */
  readonly acceptStatus?: readonly number[];
}

/** A body was abandoned part-way: larger than its own cap (`answer`) or than what was left of the budget (`budget`). */
export class AnswerTooLargeError extends ThreadlineError {
  constructor(
    readonly limit: 'answer' | 'budget',
    message: string,
  ) {
    super('TL_TRACE_SOURCE', message);
    this.name = 'AnswerTooLargeError';
  }
}

const DEFAULT_TIMEOUT_MS = 10_000;
export const DEFAULT_MAX_ANSWER_BYTES = 64 * 1024 * 1024;
/** An error answer is quoted this far: enough to recognise it, not a page of HTML. */
const QUOTE_CHARS = 200;
/** A body is redacted up to this many characters before it is cut for a message. */
const REDACTED_CHARS = 4_096;

/**
 * GETs `url` and reads the whole body as text, at most `maxBytes`. A user:password in the URL
 * becomes a Basic Authorization header (fetch refuses URLs with credentials) and never
 * appears in a message. Network failures and a timeout throw TL_TRACE_SOURCE naming the
 * store, the safe URL and what to check; a body past `maxBytes` or the budget is abandoned as it
 * streams in (AnswerTooLargeError); any status is returned.
 */
export async function httpGet(url: URL, options: HttpGetOptions): Promise<HttpAnswer> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_ANSWER_BYTES;
  const { target, authorization } = withoutCredentials(url);
  const where = `${options.what} (GET ${safeUrl(target)})`;
  const headers: Record<string, string> = { accept: 'application/json', ...options.headers };
  if (authorization !== undefined) headers.authorization = authorization;
  // Nothing more is asked once the budget is spent: what is left would be dropped unread.
  if (options.budget?.spent === true) throw budgetSpent(where, options.budget);
  const signal = AbortSignal.timeout(timeoutMs);
  let response: Response;
  try {
    response = await fetch(target, { headers, signal, redirect: 'follow' });
  } catch (error) {
    throw networkError(error, where, target, timeoutMs);
  }
  const declared = Number(response.headers.get('content-length') ?? Number.NaN);
  if (declared > maxBytes) {
    await response.body?.cancel().catch(() => undefined);
    throw tooLarge(where, maxBytes);
  }

  let text: string;
  try {
    text = await readBounded(response, maxBytes, options.budget, where);
  } catch (error) {
    if (error instanceof ThreadlineError) throw error;
    throw networkError(error, where, target, timeoutMs);
  }
  return { status: response.status, contentType: response.headers.get('content-type') ?? '', text };
}

/**
 * GETs `url` and parses its JSON body. A status other than 2xx (and `acceptStatus`), an empty
 * 2xx body and a body that is not JSON each throw TL_TRACE_SOURCE with the status and the
 * start of the body, so the person running the command sees what answered instead.
 */
export async function getJson(url: URL, options: GetJsonOptions): Promise<JsonAnswer> {
  return jsonOf(await httpGet(url, options), url, options);
}

/** `answer` (of GET `url`) as JSON, with getJson's checks: for a caller that looked at the answer first. */
export function jsonOf(answer: HttpAnswer, url: URL, options: GetJsonOptions): JsonAnswer {
  const where = `${options.what} (GET ${safeUrl(withoutCredentials(url).target)})`;
  const accepted = options.acceptStatus?.includes(answer.status) ?? false;
  if (!accepted && (answer.status < 200 || answer.status > 299)) {
    const quoted = quote(answer.text);
    throw new ThreadlineError(
      'TL_TRACE_SOURCE',
      `${where} answered ${answer.status}${quoted ? `: ${quoted}` : ''}; check the URL and the store's own log.`,
    );
  }
  if (answer.text.trim() === '') {
    if (accepted) return { status: answer.status, body: undefined };
    throw new ThreadlineError(
      'TL_TRACE_SOURCE',
      `${where} answered ${answer.status} with an empty body; check that the URL is the store's query API.`,
    );
  }
  return { status: answer.status, body: parseJson(answer.text, where) };
}

/** The body as JSON, or TL_TRACE_SOURCE quoting its start. */
export function parseJson(text: string, where: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new ThreadlineError(
      'TL_TRACE_SOURCE',
      `${where} answered with something that is not JSON ("${quote(text)}"); check that the URL is the store's query API, not its UI or a proxy's page.`,
    );
  }
}

/** The first printable characters of a body, secrets redacted: for a message. */
export function quote(text: string): string {
  // Control characters would garble a terminal; runs of whitespace say nothing.
  const printable = text.slice(0, REDACTED_CHARS).replace(/[\p{Cc}\p{Cf}\s]+/gu, ' ').trim();
  // Redacted before the cut: a secret the cut split would no longer match its pattern.
  const safe = redactText(printable);
  return safe.length > QUOTE_CHARS ? `${safe.slice(0, QUOTE_CHARS)}…` : safe;
}

/** The URL without user:password, and the Basic header they make. */
export function withoutCredentials(url: URL): { target: URL; authorization?: string } {
  if (url.username === '' && url.password === '') return { target: url };
  const target = new URL(url);
  target.username = '';
  target.password = '';
  const pair = `${decoded(url.username)}:${decoded(url.password)}`;
  return { target, authorization: `Basic ${Buffer.from(pair, 'utf8').toString('base64')}` };
}

/** The URL parser keeps userinfo percent-encoded; a stray `%` stays as typed. */
function decoded(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}

/** The body as text, abandoned (the connection dropped) as soon as it passes `maxBytes` or the budget. */
async function readBounded(response: Response, maxBytes: number, budget: ReadBudget | undefined, where: string): Promise<string> {
  if (response.body === null) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = response.body.getReader();
  for (;;) {
    if (budget?.spent === true) {
      await reader.cancel().catch(() => undefined);
      throw budgetSpent(where, budget);
    }
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel().catch(() => undefined);
      throw tooLarge(where, maxBytes);
    }
    if (budget !== undefined && !budget.take(value.byteLength)) {
      await reader.cancel().catch(() => undefined);
      throw budgetSpent(where, budget);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function tooLarge(where: string, maxBytes: number): AnswerTooLargeError {
  return new AnswerTooLargeError('answer', `${where} answered with more than ${byteSize(maxBytes)}; narrow the time window or lower the limit.`);
}

function budgetSpent(where: string, budget: ReadBudget): AnswerTooLargeError {
  return new AnswerTooLargeError('budget', `${where}: the ${byteSize(budget.maxBytes)} this command reads from the store in all are spent; narrow the time window or lower the limit.`);
}

/** fetch's failure, said the way a person fixes it: refused, no such host, timed out. */
function networkError(error: unknown, where: string, url: URL, timeoutMs: number): ThreadlineError {
  if (error instanceof Error && error.name === 'TimeoutError') {
    return new ThreadlineError(
      'TL_TRACE_SOURCE',
      `${where} did not answer within ${timeoutMs / 1000} s; check that it is up and reachable, or narrow the time window.`,
      { cause: error },
    );
  }
  const code = causeCode(error);
  if (code === 'ECONNREFUSED') {
    return new ThreadlineError(
      'TL_TRACE_SOURCE',
      `${where} refused the connection; check that it is running and listening at ${url.host}.`,
      { cause: error },
    );
  }
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') {
    return new ThreadlineError(
      'TL_TRACE_SOURCE',
      `${where} could not be reached: the host ${url.hostname} was not found (DNS); check the host name in the URL.`,
      { cause: error },
    );
  }
  const detail = redactText(code !== undefined ? `${code}: ${causeMessage(error)}` : causeMessage(error));
  return new ThreadlineError('TL_TRACE_SOURCE', `${where} could not be reached (${detail}); check the URL and the network.`, {
    cause: error,
  });
}

/** fetch wraps the socket's error as `cause`; an aggregate (IPv4 and IPv6 refused) holds several. */
function causeCode(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current instanceof Error; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && !code.startsWith('UND_ERR_')) return code;
    const nested = (current as { errors?: unknown }).errors;
    if (Array.isArray(nested) && nested[0] instanceof Error) {
      current = nested[0];
      continue;
    }
    current = current.cause;
  }
  return undefined;
}

function causeMessage(error: unknown): string {
  return error instanceof Error && error.cause !== undefined ? messageOf(error.cause) : messageOf(error);
}
