/**
 * Traces from Grafana Tempo's HTTP API (docs/sources/tempo/api_docs/_index.md): a TraceQL
 * search (GET /api/search, which answers trace ids with a few matched spans each), then
 * each trace whole (GET /api/traces/<id>, OTLP/JSON under `batches` with base64 ids,
 * pkg/tempopb/trace_utils.go MarshalToJSONV1). Every answer is capped, and the traces one
 * source reads share a budget: a hostile or runaway Tempo cannot make the command hold more.
 */
import { ThreadlineError } from '../errors.js';
import { safeUrl } from '../text/redact-secrets.js';
import { byteSize } from '../text/byte-size.js';
import { AnswerTooLargeError, DEFAULT_MAX_ANSWER_BYTES, getJson, httpGet, jsonOf, type HttpGetOptions } from './http-json.js';
import { baseUrlOf } from './jaeger-source.js';
import { spansFromOtlpJson } from './otlp-json.js';
import { ReadBudget } from './read-budget.js';
import type { StoredTrace } from './trace-model.js';
import type { TraceQuery, TraceSource } from './trace-source.js';
import { normalTraceId, rankTraces, spanFilters, traceMatches, type SpanFilter } from './trace-store-search.js';

export interface TempoSourceOptions {
  /** Per request; 10 s unless given. */
  readonly timeoutMs?: number;
  /** Per answer; 64 MiB unless given. A trace answered with more is left out (and said). */
  readonly maxBytes?: number;
  /** The trace bodies one source reads in all; DEFAULT_MAX_TOTAL_BYTES unless given. Past it no more traces are read (and said). */
  readonly maxTotalBytes?: number;
  /** Traces fetched at once after a search; 8 unless given. */
  readonly concurrency?: number;
  /** X-Scope-OrgID, for a multi-tenant Tempo. */
  readonly tenant?: string;
}

const DEFAULT_CONCURRENCY = 8;
/** Far above a busy gateway's thousand traces (tens of MiB), far below what would exhaust the command's memory. */
export const DEFAULT_MAX_TOTAL_BYTES = 256 * 1024 * 1024;
/** Trace ids named in a warning; the count says how many more. */
const IDS_NAMED = 5;

/** A trace as fetched, or why it is not there. */
type Fetched =
  | { readonly trace: StoredTrace }
  | { readonly missing: 'gone' | 'refused' | 'oversized' | 'unread'; readonly traceId: string };

/** Reads traces from Tempo; see the module comment. */
export class TempoSource implements TraceSource {
  readonly description: string;
  private readonly base: URL;
  private readonly http: HttpGetOptions;
  /** What every trace fetch shares: the bytes this source may still read. */
  private readonly traceHttp: HttpGetOptions;
  private readonly maxBytes: number;
  private readonly budget: ReadBudget;
  private readonly concurrency: number;
  /** Traces a search found that were gone when fetched (compacted or expired in between). */
  private vanished = 0;
  /** Traces Tempo refused to return whole (422). */
  private tooLarge = 0;
  /** Traces answered with more than maxBytes, abandoned as they came in. */
  private oversized = 0;
  /** Traces not read because the budget was spent, by id. */
  private readonly unread = new Set<string>();

  /** `baseUrl`: Tempo's HTTP API, e.g. http://localhost:3200 (a base path is kept). */
  constructor(baseUrl: string, options: TempoSourceOptions = {}) {
    this.base = baseUrlOf(baseUrl, '--tempo', 'http://localhost:3200');
    this.description = `tempo ${safeUrl(this.base).replace(/\/$/, '')}`;
    this.concurrency = Math.max(1, options.concurrency ?? DEFAULT_CONCURRENCY);
    this.maxBytes = options.maxBytes ?? DEFAULT_MAX_ANSWER_BYTES;
    this.budget = new ReadBudget(options.maxTotalBytes ?? DEFAULT_MAX_TOTAL_BYTES);
    this.http = {
      what: this.description,
      maxBytes: this.maxBytes,
      ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
      ...(options.tenant === undefined ? {} : { headers: { 'x-scope-orgid': options.tenant } }),
    };
    this.traceHttp = { ...this.http, budget: this.budget };
  }

  async search(query: TraceQuery): Promise<StoredTrace[]> {
    const filters = spanFilters(query);
    const found = await Promise.all(filters.map((filter) => this.searchIds(query, filter)));
    // The errored searches come first, so their traces are the ones kept when the limit cuts.
    const ids = [...new Set(found.flat())].slice(0, Math.max(0, query.limit));
    const fetched = await mapConcurrently(ids, this.concurrency, (id) => this.fetch(id));
    // Listed by the search, missing when fetched: gone since (a get of an unknown id is not).
    this.vanished += fetched.filter((result) => 'missing' in result && result.missing === 'gone').length;
    // Tempo matches the whole window in seconds: check the spans against what was asked.
    const wanted = fetched.flatMap((result) => ('trace' in result && traceMatches(result.trace, filters, query) ? [result.trace] : []));
    return rankTraces(wanted, query.limit);
  }

  async get(traceId: string): Promise<StoredTrace | undefined> {
    const id = normalTraceId(traceId);
    if (id === undefined) throw new ThreadlineError('TL_TRACE_SOURCE', `"${traceId.slice(0, 64)}" is not a trace id (up to 32 hex digits).`);
    const fetched = await this.fetch(id);
    return 'trace' in fetched ? fetched.trace : undefined;
  }

  /** One trace whole, or why not; each reason but `gone` is counted for warnings(). */
  private async fetch(id: string): Promise<Fetched> {
    const missing = (why: 'gone' | 'refused' | 'oversized' | 'unread'): Fetched => {
      if (why === 'refused') this.tooLarge++;
      else if (why === 'oversized') this.oversized++;
      else if (why === 'unread') this.unread.add(id);
      return { missing: why, traceId: id };
    };
    if (this.budget.spent) return missing('unread');
    const url = this.url(`api/traces/${id}`);
    // The trace-by-id combiner answers 404 with no body when no querier has the trace, and 422
    // for a trace over max_bytes_per_trace: one such trace must not cost the whole search.
    let raw;
    try {
      raw = await httpGet(url, this.traceHttp);
    } catch (error) {
      if (error instanceof AnswerTooLargeError) return missing(error.limit === 'budget' ? 'unread' : 'oversized');
      throw error;
    }
    if (raw.status === 404) return missing('gone');
    if (raw.status === 422) return missing('refused');
    const answer = jsonOf(raw, url, this.http);
    const spans = spansFromOtlpJson(answer.body, this.description).filter((span) => span.traceId === id);
    return spans.length === 0 ? missing('gone') : { trace: { traceId: id, spans } };
  }

  /** Says what a search listed but did not examine: gone, refused or too large, or past the budget. */
  warnings(): string[] {
    const warnings: string[] = [];
    const traces = (count: number) => `${count} trace${count === 1 ? '' : 's'}`;
    if (this.vanished > 0) {
      warnings.push(`${this.description} listed ${traces(this.vanished)} in a search that it no longer had when asked (retention or compaction in between); left out.`);
    }
    if (this.tooLarge > 0) {
      warnings.push(`${this.description} refused ${traces(this.tooLarge)} as larger than its max_bytes_per_trace (422); left out.`);
    }
    if (this.oversized > 0) {
      warnings.push(`${this.description} answered ${traces(this.oversized)} with more than ${byteSize(this.maxBytes)} each; read no further and left out.`);
    }
    if (this.unread.size > 0) {
      const named = [...this.unread].slice(0, IDS_NAMED).join(', ');
      const more = this.unread.size > IDS_NAMED ? ` and ${this.unread.size - IDS_NAMED} more` : '';
      warnings.push(
        `${this.description}: stopped reading traces after ${byteSize(this.budget.maxBytes)}, the most one command reads from a trace store; ` +
          `${traces(this.unread.size)} were not examined (${named}${more}); narrow --since or --chat, or lower --limit.`,
      );
    }
    return warnings;
  }

  /** Tempo has no viewer of its own; a Grafana Explore link needs the data source's uid, which only Grafana knows. */
  link(): undefined {
    return undefined;
  }

  /** The trace ids one TraceQL search finds, as 32 hex digits. */
  private async searchIds(query: TraceQuery, filter: SpanFilter): Promise<string[]> {
    const url = this.url('api/search');
    url.searchParams.set('q', traceQl(query.service, filter));
    url.searchParams.set('start', String(Math.floor(query.since / 1000)));
    url.searchParams.set('end', String(Math.ceil(query.until / 1000)));
    url.searchParams.set('limit', String(Math.max(1, query.limit)));
    const answer = await getJson(url, this.http);
    return traceIdsOf(answer.body, this.description);
  }

  private url(path: string): URL {
    const url = new URL(this.base);
    url.pathname = `${url.pathname.replace(/\/$/, '')}/${path}`;
    return url;
  }
}

/**
 * One spanset filter: every condition on the same span. Values are TraceQL string literals,
 * which take the escapes JSON.stringify writes (pkg/traceql/lexer.go reads them with
 * strconv.Unquote).
 */
export function traceQl(service: string, filter: SpanFilter): string {
  const conditions = [`resource.service.name = ${JSON.stringify(service)}`];
  if (filter.operation !== undefined) conditions.push(`name = ${JSON.stringify(filter.operation)}`);
  if (filter.errorOnly) conditions.push('status = error');
  for (const [key, value] of Object.entries(filter.attributes)) conditions.push(`span.${key} = ${JSON.stringify(value)}`);
  return `{ ${conditions.join(' && ')} }`;
}

/**
 * The trace ids of a search answer, `{traces: [{traceID, …}], metrics}` (tempopb
 * SearchResponse as jsonpb writes it: `traces` left out when none). Tempo writes ids without
 * their leading zeros (pkg/util/traceid.go TraceIDToHexString).
 */
function traceIdsOf(body: unknown, where: string): string[] {
  const malformed = (problem: string) =>
    new ThreadlineError('TL_TRACE_SOURCE', `${where} answered a search with something that is not Tempo's search result: ${problem}`);
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw malformed('not a JSON object');
  const traces = (body as Record<string, unknown>)['traces'];
  if (traces === undefined || traces === null) {
    if (!('metrics' in body)) throw malformed('neither "traces" nor "metrics" is in it');
    return [];
  }
  if (!Array.isArray(traces)) throw malformed('"traces" is not an array');
  return traces.map((trace, index) => {
    const id = typeof trace === 'object' && trace !== null ? (trace as Record<string, unknown>)['traceID'] : undefined;
    const normal = typeof id === 'string' ? normalTraceId(id) : undefined;
    if (normal === undefined) throw malformed(`traces[${index}] has no traceID of up to 32 hex digits`);
    return normal;
  });
}

/** `work` on each item, at most `limit` at a time, results in the items' order. */
async function mapConcurrently<T, R>(items: readonly T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const index = next++;
      results[index] = await work(items[index]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}
