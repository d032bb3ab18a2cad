/**
 * Traces from a Jaeger query service (the UI port, 16686). Jaeger v2 serves api_v3 over
 * HTTP (cmd/query/app/apiv3/http_gateway.go: OTLP/JSON in `{result}`); older Jaeger only the
 * UI API (cmd/query/app/http_handler.go: `{data: [trace]}` with tags= filters). Which one
 * answers is found on first use. Jaeger 2.12 serves both but ignores attribute filters over
 * api_v3 (its gateway passes an empty map), so searches by attribute go to the UI API while a
 * Jaeger has it (newer ones drop its search and filter over api_v3 instead).
 */
import { ThreadlineError } from '../errors.js';
import { safeUrl } from '../text/redact-secrets.js';
import { getJson, httpGet, jsonOf, type HttpGetOptions } from './http-json.js';
import { tracesFromJaegerJson } from './jaeger-json.js';
import { spansFromOtlpJson } from './otlp-json.js';
import { groupByTrace, type StoredTrace } from './trace-model.js';
import type { TraceQuery, TraceSource } from './trace-source.js';
import { normalTraceId, rankTraces, spanFilters, traceMatches, type SpanFilter } from './trace-store-search.js';

export interface JaegerSourceOptions {
  /** Per request; 10 s unless given. */
  readonly timeoutMs?: number;
  /** Per answer; 64 MiB unless given. */
  readonly maxBytes?: number;
}

/** `v3`: api_v3 (Jaeger v2); `v1`: the UI API only (Jaeger 1.x, or api_v3 turned off). */
export type JaegerApi = 'v3' | 'v1';

/** What a Jaeger answers: its main API, and whether the UI API's search is there too. */
interface JaegerApis {
  readonly api: JaegerApi;
  readonly uiSearch: boolean;
}

/** A JSON body that says what a Jaeger error answer says: `{error: {httpCode}}` (api_v3) or `{errors: [...]}` (UI API). */
function isJaegerError(body: unknown): boolean {
  if (typeof body !== 'object' || body === null) return false;
  const record = body as Record<string, unknown>;
  const v3 = record['error'];
  return (typeof v3 === 'object' && v3 !== null && 'httpCode' in v3) || Array.isArray(record['errors']);
}

/** Reads traces from Jaeger's query service; see the module comment for the two APIs. */
export class JaegerSource implements TraceSource {
  readonly description: string;
  private readonly base: URL;
  private readonly http: HttpGetOptions;
  private apis: Promise<JaegerApis> | undefined;

  /** `baseUrl`: the query service, e.g. http://localhost:16686 (a base path such as /jaeger is kept). */
  constructor(baseUrl: string, options: JaegerSourceOptions = {}) {
    this.base = baseUrlOf(baseUrl, '--jaeger', 'http://localhost:16686');
    this.description = `jaeger ${safeUrl(this.base).replace(/\/$/, '')}`;
    this.http = {
      what: this.description,
      ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
      ...(options.maxBytes === undefined ? {} : { maxBytes: options.maxBytes }),
    };
  }

  async search(query: TraceQuery): Promise<StoredTrace[]> {
    const { api, uiSearch } = await this.detect();
    const filters = spanFilters(query);
    const byAttribute = (filter: SpanFilter) => filter.errorOnly || Object.keys(filter.attributes).length > 0;
    const answers = await Promise.all(
      filters.map((filter) => (api === 'v3' && !(uiSearch && byAttribute(filter)) ? this.findV3(query, filter) : this.findV1(query, filter))),
    );
    // Jaeger 2.12 ignores attributes over api_v3, and its UI API reads error=true backwards
    // (fixed in jaeger#8217): keep only what the filters asked for.
    return rankTraces(
      answers.flat().filter((trace) => traceMatches(trace, filters, query)),
      query.limit,
    );
  }

  async get(traceId: string): Promise<StoredTrace | undefined> {
    const id = normalTraceId(traceId);
    if (id === undefined) throw new ThreadlineError('TL_TRACE_SOURCE', `"${traceId.slice(0, 64)}" is not a trace id (up to 32 hex digits).`);
    const { api } = await this.detect();
    const url = this.url(api === 'v3' ? `api/v3/traces/${id}` : `api/traces/${id}`);
    const answer = await getJson(url, { ...this.http, acceptStatus: [404] });
    if (answer.status === 404) {
      if (isJaegerError(answer.body)) return undefined;
      throw this.notJaeger(url, 'answered 404 without a Jaeger error body');
    }
    const traces =
      api === 'v3' ? groupByTrace(spansFromOtlpJson(answer.body, this.description)) : tracesFromJaegerJson(answer.body, this.description);
    return traces.find((trace) => trace.traceId === id);
  }

  link(traceId: string): string | undefined {
    return `${safeUrl(this.base).replace(/\/$/, '')}/trace/${traceId}`;
  }

  /** Which API this Jaeger serves: asked once (again after a failure). */
  async detectApi(): Promise<JaegerApi> {
    return (await this.detect()).api;
  }

  private detect(): Promise<JaegerApis> {
    this.apis ??= this.probe().catch((error: unknown) => {
      this.apis = undefined;
      throw error;
    });
    return this.apis;
  }

  /**
   * api_v3 when /api/v3/services answers with a JSON object (`{services: [...]}`, or `{}`
   * when empty); the UI API when /api/services answers `{data: ...}`. A Jaeger without a
   * route answers with the UI's index.html and 200 (static_handler.go's NotFoundHandler), a
   * newer one or a proxy with 404: neither is JSON, so neither is taken for the API.
   */
  private async probe(): Promise<JaegerApis> {
    const v3Url = this.url('api/v3/services');
    const v3 = await httpGet(v3Url, this.http);
    // A failure or a refusal (a proxy's 401 or 403) is said as such, not as "not Jaeger".
    if (v3.status >= 500 || v3.status === 401 || v3.status === 403) jsonOf(v3, v3Url, this.http); // throws, quoting the answer
    const services = v3.status === 200 ? jsonObject(v3.text) : undefined;
    const hasV3 = services !== undefined && !('data' in services);
    // jaeger#9260 removed /api/services together with the UI API's search.
    const v1Url = this.url('api/services');
    const v1 = await httpGet(v1Url, this.http);
    if ((v1.status >= 500 || v1.status === 401 || v1.status === 403) && !hasV3) jsonOf(v1, v1Url, this.http); // throws, quoting the answer
    const uiSearch = v1.status === 200 && jsonObject(v1.text)?.['data'] !== undefined;
    if (hasV3 || uiSearch) return { api: hasV3 ? 'v3' : 'v1', uiSearch };
    throw this.notJaeger(v1Url, 'neither /api/v3/services nor /api/services answered as Jaeger does');
  }

  /** api_v3 FindTraces; snake_case parameters, which Jaeger 2.12 requires and later versions still accept. */
  private async findV3(query: TraceQuery, filter: SpanFilter): Promise<StoredTrace[]> {
    const url = this.url('api/v3/traces');
    url.searchParams.set('query.service_name', query.service);
    if (filter.operation !== undefined) url.searchParams.set('query.operation_name', filter.operation);
    url.searchParams.set('query.start_time_min', new Date(query.since).toISOString());
    url.searchParams.set('query.start_time_max', new Date(query.until).toISOString());
    url.searchParams.set('query.num_traces', String(Math.max(1, query.limit)));
    const attributes = attributesOf(filter);
    if (attributes !== undefined) url.searchParams.set('query.attributes', attributes);
    const answer = await getJson(url, { ...this.http, acceptStatus: [404] });
    if (answer.status === 404) {
      // "No traces found" is a 404 with a JSON error; any other 404 is not this API.
      if (isJaegerError(answer.body)) return [];
      throw this.notJaeger(url, 'answered 404 without a Jaeger error body');
    }
    return groupByTrace(spansFromOtlpJson(answer.body, this.description));
  }

  /** The UI API's search: times in µs, tags as one JSON object. */
  private async findV1(query: TraceQuery, filter: SpanFilter): Promise<StoredTrace[]> {
    const url = this.url('api/traces');
    url.searchParams.set('service', query.service);
    if (filter.operation !== undefined) url.searchParams.set('operation', filter.operation);
    const tags = attributesOf(filter);
    if (tags !== undefined) url.searchParams.set('tags', tags);
    url.searchParams.set('start', String(Math.floor(query.since * 1000)));
    url.searchParams.set('end', String(Math.ceil(query.until * 1000)));
    url.searchParams.set('limit', String(Math.max(1, query.limit)));
    const answer = await getJson(url, this.http);
    return tracesFromJaegerJson(answer.body, this.description);
  }

  private url(path: string): URL {
    const url = new URL(this.base);
    url.pathname = `${url.pathname.replace(/\/$/, '')}/${path}`;
    return url;
  }

  private notJaeger(url: URL, what: string): ThreadlineError {
    return new ThreadlineError(
      'TL_TRACE_SOURCE',
      `${this.description} (GET ${safeUrl(url)}) ${what}; check that --jaeger is the query service's URL (the UI port, 16686 by default), not the collector's.`,
    );
  }
}

/** The filter's attributes (and error=true) as the JSON object both Jaeger APIs take, or undefined when none. */
function attributesOf(filter: SpanFilter): string | undefined {
  const tags: Record<string, string> = { ...filter.attributes, ...(filter.errorOnly ? { error: 'true' } : {}) };
  return Object.keys(tags).length === 0 ? undefined : JSON.stringify(tags);
}

function jsonObject(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** An http(s) base URL without query or fragment, or TL_TRACE_SOURCE naming the option. */
export function baseUrlOf(value: string, option: string, example: string): URL {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ThreadlineError('TL_TRACE_SOURCE', `${option} "${safeUrl(value)}" is not a URL; give an address such as ${example}.`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ThreadlineError('TL_TRACE_SOURCE', `${option} "${safeUrl(url)}" is not an http(s) URL.`);
  }
  url.search = '';
  url.hash = '';
  return url;
}
