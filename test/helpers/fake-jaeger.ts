/**
 * A fake Jaeger query service on loopback, answering with Jaeger's own shapes:
 * - mode 'v3' is Jaeger v2 (2.12, the version docker-compose.yml runs, unless `version`
 *   says 2.20): api_v3 over HTTP and the UI API side by side;
 * - mode 'v1' is an older Jaeger without api_v3: its /api/v3 paths fall through to the UI.
 * Sources of each shape are cited where it is built.
 */
import {
  HeldTraces,
  goHttpError,
  hasAttribute,
  json,
  micros,
  protoJsonKeyValue,
  startFakeServer,
  valueAsString,
  type FakeAnswer,
  type FakeRequest,
  type FakeServer,
  type HeldSpan,
  type OtlpKeyValue,
} from './fake-trace-store.js';

export interface FakeJaegerOptions {
  readonly mode: 'v3' | 'v1';
  /**
   * Jaeger v2's behaviour where versions differ: 2.12 ignores query.attributes over api_v3
   * and matches the UI API's error=true only on OK spans; 2.20 does both as asked.
   */
  readonly version?: '2.12' | '2.20';
  /** false: a Jaeger after jaeger#9260, which dropped the UI API's search and /api/services (mode 'v3' only). */
  readonly uiSearch?: boolean;
}

export interface FakeJaeger extends FakeServer {
  readonly traces: HeldTraces;
}

/**
 * The UI's index.html: jaeger cmd/query/app/static_handler.go (v2.12.0, lines 210-224) sets
 * it as the router's NotFoundHandler, so an unknown path answers 200 with HTML.
 */
const INDEX_HTML: FakeAnswer = {
  status: 200,
  contentType: 'text/html; charset=utf-8',
  body: '<!doctype html><html lang="en"><head><title>Jaeger UI</title></head><body><div id="jaeger-ui-root"></div></body></html>',
};

/** Starts a fake Jaeger holding no traces; feed it with `traces.add(request)`. */
export async function startFakeJaeger(options: FakeJaegerOptions): Promise<FakeJaeger> {
  const traces = new HeldTraces();
  const version = options.version ?? '2.12';
  const uiSearch = options.mode === 'v1' || options.uiSearch !== false;
  const server = await startFakeServer((request) => route(request, traces, options.mode, version, uiSearch));
  return Object.assign(server, { traces });
}

function route(request: FakeRequest, traces: HeldTraces, mode: 'v3' | 'v1', version: '2.12' | '2.20', uiSearch: boolean): FakeAnswer {
  const { path } = request;
  if (mode === 'v3') {
    if (path === '/api/v3/services') return v3Services(traces);
    if (path === '/api/v3/traces') return v3FindTraces(request, traces, version);
    const id = /^\/api\/v3\/traces\/([^/]+)$/.exec(path)?.[1];
    if (id !== undefined) return v3GetTrace(id, traces);
  }
  if (!uiSearch && (path === '/api/services' || path === '/api/traces')) return INDEX_HTML;
  if (path === '/api/services') return v1Services(traces, mode, version);
  if (path === '/api/traces') return v1Search(request, traces, mode === 'v1' ? 'translated' : version);
  const id = /^\/api\/traces\/([^/]+)$/.exec(path)?.[1];
  if (id !== undefined) return v1GetTrace(id, traces);
  return INDEX_HTML;
}

// ---- api_v3: jaeger cmd/query/app/apiv3/http_gateway.go (v2.12.0) ----

/**
 * `{services: [...]}` (snapshot cmd/query/app/apiv3/snapshots/GetServices.json); gogo jsonpb
 * leaves out an empty repeated field, so no services is `{}`.
 */
function v3Services(traces: HeldTraces): FakeAnswer {
  const services = traces.services();
  return json(200, services.length === 0 ? {} : { services }, 'text/plain; charset=utf-8');
}

/** http_gateway.go tryHandleError: GRPCGatewayError through http.Error. */
function v3Error(status: number, message: string): FakeAnswer {
  return goHttpError(status, JSON.stringify({ error: { httpCode: status, message } }));
}

/**
 * parseFindTracesQuery (v2.12.0): snake_case parameters, RFC 3339 times required, no
 * query.attributes (2.20's query_parser.go takes them as a JSON object); the memory store
 * refuses a search depth of 0 (internal/storage/v2/memory/memory.go errInvalidSearchDepth).
 */
function v3FindTraces(request: FakeRequest, traces: HeldTraces, version: '2.12' | '2.20'): FakeAnswer {
  const { query } = request;
  const min = query.get('query.start_time_min');
  const max = query.get('query.start_time_max');
  if (min === null || max === null) return v3Error(400, 'query.start_time_min and query.start_time_max are required');
  const minMs = Date.parse(min);
  const maxMs = Date.parse(max);
  if (Number.isNaN(minMs) || Number.isNaN(maxMs)) return v3Error(400, `malformed parameter query.start_time_min: parsing time "${min}"`);
  const depth = Number(query.get('query.num_traces') ?? 0);
  if (!(depth > 0 && depth < 100_000)) return v3Error(500, 'search depth must be greater than 0 and less than max traces');
  let attributes: Record<string, string> = {};
  if (version === '2.20' && query.get('query.attributes') !== null) attributes = JSON.parse(query.get('query.attributes')!) as Record<string, string>;
  const found = findTraces(traces, {
    service: query.get('query.service_name') ?? '',
    operation: query.get('query.operation_name') ?? '',
    startNs: BigInt(minMs) * 1_000_000n,
    endNs: BigInt(maxMs) * 1_000_000n,
    tags: attributes,
    errorTag: 'fixed',
    limit: depth,
  });
  // returnTraces: nothing found is a 404; found traces go out as one TracesData.
  if (found.length === 0) return v3Error(404, 'No traces found');
  return json(200, { result: tracesData(found.flat()) }, 'text/plain; charset=utf-8');
}

function v3GetTrace(id: string, traces: HeldTraces): FakeAnswer {
  if (!/^[0-9a-fA-F]{1,32}$/.test(id)) return v3Error(400, `malformed parameter trace_id: strconv.ParseUint: parsing "${id}": invalid syntax`);
  const spans = traces.get(id.toLowerCase().padStart(32, '0'));
  if (spans === undefined) return v3Error(404, 'No traces found');
  return json(200, { result: tracesData(spans) }, 'text/plain; charset=utf-8');
}

/**
 * OTLP/JSON as pdata's JSONMarshaler writes it (internal/jptrace/traces.go): hex ids, int64
 * as strings, enums as numbers, empty fields left out; one ResourceSpans per resource.
 */
function tracesData(spans: readonly HeldSpan[]): { resourceSpans: unknown[] } {
  const byResource = new Map<string, HeldSpan[]>();
  for (const span of spans) {
    const key = JSON.stringify([span.resource, span.scope]);
    byResource.set(key, [...(byResource.get(key) ?? []), span]);
  }
  return {
    resourceSpans: [...byResource.values()].map((group) => ({
      resource: { attributes: group[0]!.resource.map(protoJsonKeyValue) },
      scopeSpans: [{ scope: group[0]!.scope, spans: group.map(pdataSpan) }],
    })),
  };
}

function pdataSpan(span: HeldSpan): Record<string, unknown> {
  return {
    traceId: span.traceId,
    spanId: span.spanId,
    ...(span.traceState ? { traceState: span.traceState } : {}),
    ...(span.parentSpanId ? { parentSpanId: span.parentSpanId } : {}),
    ...(span.flags ? { flags: span.flags } : {}),
    name: span.name,
    ...(span.kind ? { kind: span.kind } : {}),
    startTimeUnixNano: String(span.startNs),
    endTimeUnixNano: String(span.endNs),
    ...(span.attributes.length ? { attributes: span.attributes.map(protoJsonKeyValue) } : {}),
    ...(span.events.length
      ? {
          events: span.events.map((event) => ({
            timeUnixNano: String(event.timeNs),
            name: event.name,
            ...(event.attributes.length ? { attributes: event.attributes.map(protoJsonKeyValue) } : {}),
          })),
        }
      : {}),
    ...(span.links.length
      ? { links: span.links.map((link) => ({ traceId: link.traceId, spanId: link.spanId, ...(link.attributes.length ? { attributes: link.attributes.map(protoJsonKeyValue) } : {}) })) }
      : {}),
    status: { ...(span.statusMessage ? { message: span.statusMessage } : {}), ...(span.statusCode ? { code: span.statusCode } : {}) },
  };
}

// ---- the UI API: jaeger cmd/query/app/http_handler.go and internal/uimodel (v2.12.0) ----

/** structuredResponse: data, total, limit, offset and errors, always all five. */
function structured(data: unknown, total = 0): Record<string, unknown> {
  return { data, total, limit: 0, offset: 0, errors: null };
}

/** handleError: a structuredResponse with one error, through http.Error. */
function v1Error(status: number, message: string): FakeAnswer {
  return goHttpError(status, JSON.stringify({ data: null, total: 0, limit: 0, offset: 0, errors: [{ code: status, msg: message }] }));
}

/** 2.12's memory store answers no services with a nil slice, `data: null` (fixed by 528eb6750). */
function v1Services(traces: HeldTraces, mode: 'v3' | 'v1', version: '2.12' | '2.20'): FakeAnswer {
  const services = traces.services();
  const data = services.length === 0 && mode === 'v3' && version === '2.12' ? null : services;
  return json(200, structured(data, services.length));
}

/**
 * parseTraceQueryParams (cmd/query/app/query_parser.go): service required, `tags` a JSON
 * object and `tag` key:value pairs, start/end in µs (default the last 48 h), limit 100.
 */
function v1Search(request: FakeRequest, traces: HeldTraces, errorTag: ErrorTagRule | '2.12' | '2.20'): FakeAnswer {
  const { query } = request;
  const service = query.get('service');
  if (!service) return v1Error(400, "parameter 'service' is required");
  const tags: Record<string, string> = {};
  for (const pair of query.getAll('tag')) {
    const [key, ...rest] = pair.split(':');
    if (rest.length === 0) return v1Error(400, `malformed 'tag' parameter, expecting key:value, received: ${pair}`);
    tags[key!] = rest.join(':');
  }
  for (const text of query.getAll('tags')) {
    try {
      Object.assign(tags, JSON.parse(text) as Record<string, string>);
    } catch (error) {
      return v1Error(400, `malformed 'tags' parameter, cannot unmarshal JSON: ${String(error)}`);
    }
  }
  const nowUs = BigInt(Date.now()) * 1000n;
  const startUs = query.has('start') ? BigInt(query.get('start')!) : nowUs - 48n * 3_600_000_000n;
  const endUs = query.has('end') ? BigInt(query.get('end')!) : nowUs;
  const found = findTraces(traces, {
    service,
    operation: query.get('operation') ?? '',
    startNs: startUs * 1000n,
    endNs: endUs * 1000n,
    tags,
    errorTag: errorTag === '2.12' ? 'inverted' : errorTag === '2.20' ? 'fixed' : errorTag,
    limit: Number(query.get('limit') ?? 100),
  });
  return json(200, structured(found.map(uiTrace)));
}

function v1GetTrace(id: string, traces: HeldTraces): FakeAnswer {
  if (!/^[0-9a-fA-F]{1,32}$/.test(id)) return v1Error(400, `strconv.ParseUint: parsing "${id}": invalid syntax`);
  const spans = traces.get(id.toLowerCase().padStart(32, '0'));
  // spanstore.ErrTraceNotFound
  if (spans === undefined) return v1Error(404, 'trace not found');
  return json(200, structured([uiTrace(spans)]));
}

/**
 * A trace in the UI model (internal/uimodel/model.go), translated from OTLP by the rules of
 * collector-contrib pkg/translator/jaeger/traces_to_jaegerproto.go and written by
 * internal/uimodel/converter/v1/json/from_domain.go.
 */
function uiTrace(spans: readonly HeldSpan[]): Record<string, unknown> {
  const processes: Record<string, unknown> = {};
  const processIds = new Map<string, string>();
  const uiSpans = spans.map((span) => {
    const processKey = JSON.stringify(span.resource);
    let processId = processIds.get(processKey);
    if (processId === undefined) {
      // process_hashtable.go: "p" + a count from 1
      processId = `p${processIds.size + 1}`;
      processIds.set(processKey, processId);
      processes[processId] = { serviceName: span.service, tags: span.resource.filter((tag) => tag.key !== 'service.name').map(uiTag) };
    }
    return uiSpan(span, processId);
  });
  return { traceID: uiTraceId(spans[0]!.traceId), spans: uiSpans, processes, warnings: null };
}

const KIND_NAMES = ['', 'internal', 'server', 'client', 'producer', 'consumer'];

function uiSpan(span: HeldSpan, processId: string): Record<string, unknown> {
  const references = [
    ...(span.parentSpanId ? [{ refType: 'CHILD_OF', traceID: uiTraceId(span.traceId), spanID: span.parentSpanId }] : []),
    // links become FOLLOWS_FROM; their attributes are dropped
    ...span.links.map((link) => ({ refType: 'FOLLOWS_FROM', traceID: uiTraceId(link.traceId), spanID: link.spanId })),
  ];
  const tags = [
    { key: 'otel.scope.name', type: 'string', value: span.scope.name },
    ...(span.scope.version ? [{ key: 'otel.scope.version', type: 'string', value: span.scope.version }] : []),
    ...span.attributes.map(uiTag),
    ...(span.kind ? [{ key: 'span.kind', type: 'string', value: KIND_NAMES[span.kind] }] : []),
    ...(span.statusCode === 2 ? [{ key: 'otel.status_code', type: 'string', value: 'ERROR' }, { key: 'error', type: 'bool', value: true }] : []),
    ...(span.statusCode === 1 ? [{ key: 'otel.status_code', type: 'string', value: 'OK' }] : []),
    ...(span.statusMessage ? [{ key: 'otel.status_description', type: 'string', value: span.statusMessage }] : []),
    ...(span.traceState ? [{ key: 'w3c.tracestate', type: 'string', value: span.traceState }] : []),
  ];
  return {
    traceID: uiTraceId(span.traceId),
    spanID: span.spanId,
    operationName: span.name,
    references,
    startTime: micros(span.startNs),
    duration: micros(span.endNs) - micros(span.startNs),
    tags,
    // an event's name goes in a field called `event`, unless an attribute already has that key
    logs: span.events.map((event) => ({
      timestamp: micros(event.timeNs),
      fields: [
        ...(event.name && !event.attributes.some((attribute) => attribute.key === 'event') ? [{ key: 'event', type: 'string', value: event.name }] : []),
        ...event.attributes.map(uiTag),
      ],
    })),
    processID: processId,
    warnings: null,
  };
}

/** jaeger-idl model/v1/ids.go TraceID.String: 16 digits when the high 64 bits are zero. */
function uiTraceId(traceId: string): string {
  return traceId.startsWith('0000000000000000') ? traceId.slice(16) : traceId;
}

/** Attribute types as the translator maps them; maps and arrays become their JSON text. */
function uiTag(attribute: OtlpKeyValue): Record<string, unknown> {
  const value = attribute.value;
  if ('stringValue' in value) return { key: attribute.key, type: 'string', value: value['stringValue'] };
  if ('boolValue' in value) return { key: attribute.key, type: 'bool', value: value['boolValue'] };
  if ('intValue' in value) {
    const int = Number(value['intValue']);
    // from_domain.go: an int64 past ±(2^53-1) is written as a decimal string
    return { key: attribute.key, type: 'int64', value: Number.isSafeInteger(int) ? int : String(value['intValue']) };
  }
  if ('doubleValue' in value) return { key: attribute.key, type: 'float64', value: value['doubleValue'] };
  if ('bytesValue' in value) return { key: attribute.key, type: 'binary', value: value['bytesValue'] };
  return { key: attribute.key, type: 'string', value: valueAsString(value) };
}

// ---- search, as the memory stores do it ----

/**
 * How `error=true` is matched: `fixed` against the span's ERROR status (2.20, jaeger#8217),
 * `inverted` as 2.12's memory store does it for the UI API's string tags (only OK spans),
 * `translated` against the translated tag error=true (Jaeger 1.x, which stored the UI model).
 */
type ErrorTagRule = 'fixed' | 'inverted' | 'translated';

interface Search {
  readonly service: string;
  readonly operation: string;
  readonly startNs: bigint;
  readonly endNs: bigint;
  readonly tags: Readonly<Record<string, string>>;
  readonly errorTag: ErrorTagRule;
  readonly limit: number;
}

/**
 * internal/storage/v2/memory/tenant.go (v2.12.0, lines 220-292): a trace matches when one
 * span has the service, operation, a start in the window and every tag, a tag matching an
 * attribute of the span, its scope, its resource or one of its events. Newest first.
 */
function findTraces(traces: HeldTraces, search: Search): HeldSpan[][] {
  return traces
    .newestFirst()
    .filter((spans) => spans.some((span) => spanMatches(span, search)))
    .slice(0, search.limit);
}

function spanMatches(span: HeldSpan, search: Search): boolean {
  if (search.service !== '' && span.service !== search.service) return false;
  if (search.operation !== '' && span.name !== search.operation) return false;
  if (span.startNs < search.startNs || span.startNs > search.endNs) return false;
  return Object.entries(search.tags).every(([key, value]) => {
    if (key === 'error') {
      if (search.errorTag === 'inverted') return span.statusCode === 1;
      return (span.statusCode === 2) === (value === 'true');
    }
    const everywhere: readonly OtlpKeyValue[] = [...span.attributes, ...span.resource, ...span.events.flatMap((event) => event.attributes)];
    return hasAttribute(everywhere, key, value);
  });
}
