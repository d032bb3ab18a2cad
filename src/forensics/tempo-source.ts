/**
 * Traces from Grafana Tempo's HTTP API (docs/sources/tempo/api_docs/_index.md): a TraceQL
 * search (GET /api/search, which answers trace ids with a few matched spans each), then
 * each trace whole (GET /api/traces/<id>, OTLP/JSON under `batches` with base64 ids,
 * pkg/tempopb/trace_utils.go MarshalToJSONV1).
 */
import { ThreadlineError } from '../errors.js';
import { safeUrl } from '../text/redact-secrets.js';
import { getJson, httpGet, jsonOf, type HttpGetOptions } from './http-json.js';
import { baseUrlOf } from './jaeger-source.js';
import { spansFromOtlpJson } from './otlp-json.js';
import type { StoredTrace } from './trace-model.js';
import type { TraceQuery, TraceSource } from './trace-source.js';
import { normalTraceId, rankTraces, spanFilters, traceMatches, type SpanFilter } from './trace-store-search.js';

export interface TempoSourceOptions {
  /** Per request; 10 s unless given. */
  readonly timeoutMs?: number;
  /** Per answer; 64 MiB unless given. */
  readonly maxBytes?: number;
  /** Traces fetched at once after a search; 8 unless given. */
  readonly concurrency?: number;
  /** X-Scope-OrgID, for a multi-tenant Tempo. */
  readonly tenant?: string;
}

const DEFAULT_CONCURRENCY = 8;

/** Reads traces from Tempo; see the module comment. */
export class TempoSource implements TraceSource {
  readonly description: string;
  private readonly base: URL;
  private readonly http: HttpGetOptions;
  private readonly concurrency: number;
  /** Traces a search found that were gone when fetched (compacted or expired in between). */
  private vanished = 0;
  /** Traces Tempo refused to return whole (422). */
  private tooLarge = 0;

  /** `baseUrl`: Tempo's HTTP API, e.g. http://localhost:3200 (a base path is kept). */
  constructor(baseUrl: string, options: TempoSourceOptions = {}) {
    this.base = baseUrlOf(baseUrl, '--tempo', 'http://localhost:3200');
    this.description = `tempo ${safeUrl(this.base).replace(/\/$/, '')}`;
    this.concurrency = Math.max(1, options.concurrency ?? DEFAULT_CONCURRENCY);
    this.http = {
      what: this.description,
      ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
      ...(options.maxBytes === undefined ? {} : { maxBytes: options.maxBytes }),
      ...(options.tenant === undefined ? {} : { headers: { 'x-scope-orgid': options.tenant } }),
    };
  }

  async search(query: TraceQuery): Promise<StoredTrace[]> {
    const filters = spanFilters(query);
    const found = await Promise.all(filters.map((filter) => this.searchIds(query, filter)));
    // The errored searches come first, so their traces are the ones kept when the limit cuts.
    const ids = [...new Set(found.flat())].slice(0, Math.max(0, query.limit));
    const refusedBefore = this.tooLarge;
    const traces = await mapConcurrently(ids, this.concurrency, (id) => this.get(id));
    // Missing and not refused as too large: gone since the search listed it.
    this.vanished += traces.filter((trace) => trace === undefined).length - (this.tooLarge - refusedBefore);
    // Tempo matches the whole window in seconds: check the spans against what was asked.
    const wanted = traces.filter((trace): trace is StoredTrace => trace !== undefined && traceMatches(trace, filters, query));
    return rankTraces(wanted, query.limit);
  }

  async get(traceId: string): Promise<StoredTrace | undefined> {
    const id = normalTraceId(traceId);
    if (id === undefined) throw new ThreadlineError('TL_TRACE_SOURCE', `"${traceId.slice(0, 64)}" is not a trace id (up to 32 hex digits).`);
    const url = this.url(`api/traces/${id}`);
    // The trace-by-id combiner answers 404 with no body when no querier has the trace, and 422
    // for a trace over max_bytes_per_trace: one such trace must not cost the whole search.
    const raw = await httpGet(url, this.http);
    if (raw.status === 404) return undefined;
    if (raw.status === 422) {
      this.tooLarge++;
      return undefined;
    }
    const answer = jsonOf(raw, url, this.http);
    const spans = spansFromOtlpJson(answer.body, this.description).filter((span) => span.traceId === id);
    return spans.length === 0 ? undefined : { traceId: id, spans };
  }

  /** Says how many traces a search listed but Tempo no longer had when asked for them. */
  warnings(): string[] {
    const warnings: string[] = [];
    if (this.vanished > 0) {
      warnings.push(`${this.description} listed ${this.vanished} trace${this.vanished === 1 ? '' : 's'} in a search that it no longer had when asked (retention or compaction in between); left out.`);
    }
    if (this.tooLarge > 0) {
      warnings.push(`${this.description} refused ${this.tooLarge} trace${this.tooLarge === 1 ? '' : 's'} as larger than its max_bytes_per_trace (422); left out.`);
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
