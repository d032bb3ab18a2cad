/**
 * A fake Grafana Tempo HTTP API on loopback, answering with Tempo's own shapes (grafana/tempo
 * docs/sources/tempo/api_docs/_index.md, pkg/tempopb): TraceQL search over the subset
 * TempoSource sends (`{ a = "x" && b = y }`: equality of name, status,
 * resource.service.name and span.<attribute>) and traces by id.
 */
import {
  HeldTraces,
  goHttpError,
  hasAttribute,
  json,
  protoJsonKeyValue,
  startFakeServer,
  type FakeAnswer,
  type FakeRequest,
  type FakeServer,
  type HeldSpan,
} from './fake-trace-store.js';

export interface FakeTempo extends FakeServer {
  readonly traces: HeldTraces;
}

/** Starts a fake Tempo holding no traces; feed it with `traces.add(request)`. */
export async function startFakeTempo(): Promise<FakeTempo> {
  const traces = new HeldTraces();
  const server = await startFakeServer((request) => route(request, traces));
  return Object.assign(server, { traces });
}

function route(request: FakeRequest, traces: HeldTraces): FakeAnswer {
  if (request.path === '/api/search') return search(request, traces);
  const id = /^\/api\/traces\/([^/]+)$/.exec(request.path)?.[1];
  if (id !== undefined) return traceById(id, traces);
  // gorilla/mux's default NotFoundHandler (http.NotFound)
  return goHttpError(404, '404 page not found');
}

/**
 * GET /api/traces/<id>: modules/frontend/combiner/trace_by_id.go answers 404 with no body
 * when no querier has the trace, else tempopb.MarshalToJSONV1 (pkg/tempopb/trace_utils.go):
 * gogo jsonpb, so ids are proto bytes in base64 and enums their names, with the first
 * "resourceSpans" renamed "batches".
 */
function traceById(id: string, traces: HeldTraces): FakeAnswer {
  // pkg/util/traceid.go HexStringToTraceID: hex, left-padded to 16 bytes
  if (!/^[0-9a-fA-F]{1,32}$/.test(id)) return goHttpError(400, `invalid trace id: ${id}`);
  const spans = traces.get(id.toLowerCase().padStart(32, '0'));
  if (spans === undefined) return { status: 404, body: '' };
  return json(200, { batches: batches(spans) });
}

const KIND_NAMES = ['SPAN_KIND_UNSPECIFIED', 'SPAN_KIND_INTERNAL', 'SPAN_KIND_SERVER', 'SPAN_KIND_CLIENT', 'SPAN_KIND_PRODUCER', 'SPAN_KIND_CONSUMER'];
const STATUS_NAMES = ['STATUS_CODE_UNSET', 'STATUS_CODE_OK', 'STATUS_CODE_ERROR'];

function base64(hex: string): string {
  return Buffer.from(hex, 'hex').toString('base64');
}

function batches(spans: readonly HeldSpan[]): unknown[] {
  const byResource = new Map<string, HeldSpan[]>();
  for (const span of spans) {
    const key = JSON.stringify([span.resource, span.scope]);
    byResource.set(key, [...(byResource.get(key) ?? []), span]);
  }
  return [...byResource.values()].map((group) => ({
    resource: { attributes: group[0]!.resource.map(protoJsonKeyValue) },
    scopeSpans: [{ scope: group[0]!.scope, spans: group.map(jsonpbSpan) }],
  }));
}

function jsonpbSpan(span: HeldSpan): Record<string, unknown> {
  return {
    traceId: base64(span.traceId),
    spanId: base64(span.spanId),
    ...(span.traceState ? { traceState: span.traceState } : {}),
    ...(span.parentSpanId ? { parentSpanId: base64(span.parentSpanId) } : {}),
    name: span.name,
    ...(span.kind ? { kind: KIND_NAMES[span.kind] } : {}),
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
    ...(span.links.length ? { links: span.links.map((link) => ({ traceId: base64(link.traceId), spanId: base64(link.spanId) })) } : {}),
    status: { ...(span.statusMessage ? { message: span.statusMessage } : {}), ...(span.statusCode ? { code: STATUS_NAMES[span.statusCode] } : {}) },
  };
}

/** One `field = value` of a spanset filter. */
interface Condition {
  readonly field: string;
  readonly value: string;
}

/**
 * GET /api/search?q=&start=&end=&limit= (api_docs "Search"): start/end in unix seconds, limit
 * 20 unless given. The answer is tempopb.SearchResponse through gogo jsonpb
 * (modules/frontend/combiner/common.go): `traces` left out when there are none.
 */
function search(request: FakeRequest, traces: HeldTraces): FakeAnswer {
  const q = request.query.get('q') ?? '';
  const conditions = parseTraceQl(q);
  if (typeof conditions === 'string') return goHttpError(400, `invalid TraceQL query: ${conditions}`);
  const startNs = request.query.has('start') ? BigInt(request.query.get('start')!) * 1_000_000_000n : 0n;
  const endNs = request.query.has('end') ? (BigInt(request.query.get('end')!) + 1n) * 1_000_000_000n : BigInt(Date.now() + 1000) * 1_000_000n;
  const limit = Number(request.query.get('limit') ?? 20);
  const found: Record<string, unknown>[] = [];
  for (const spans of traces.newestFirst()) {
    if (found.length >= limit) break;
    const first = spans.reduce((min, span) => (span.startNs < min ? span.startNs : min), spans[0]!.startNs);
    const last = spans.reduce((max, span) => (span.endNs > max ? span.endNs : max), spans[0]!.endNs);
    if (last < startNs || first >= endNs) continue;
    const matched = spans.filter((span) => conditions.every((condition) => conditionHolds(span, condition)));
    if (matched.length === 0) continue;
    found.push(searchMetadata(spans, matched, first, last));
  }
  return json(200, { ...(found.length ? { traces: found } : {}), metrics: { inspectedTraces: traces.newestFirst().length, inspectedBytes: '4096' } });
}

/**
 * tempopb.TraceSearchMetadata (pkg/tempopb/tempo.proto): traceID without leading zeros
 * (pkg/util/traceid.go TraceIDToHexString), the root's service and name, times as strings.
 */
function searchMetadata(spans: readonly HeldSpan[], matched: readonly HeldSpan[], first: bigint, last: bigint): Record<string, unknown> {
  const root = spans.find((span) => span.parentSpanId === undefined);
  const spanSet = {
    spans: matched.slice(0, 3).map((span) => ({
      spanID: span.spanId,
      name: span.name,
      startTimeUnixNano: String(span.startNs),
      durationNanos: String(span.endNs - span.startNs),
    })),
    matched: matched.length,
  };
  return {
    traceID: spans[0]!.traceId.replace(/^0+/, ''),
    rootServiceName: root?.service ?? '<root span not yet received>',
    ...(root ? { rootTraceName: root.name } : {}),
    startTimeUnixNano: String(first),
    durationMs: Number((last - first) / 1_000_000n),
    spanSet,
    spanSets: [spanSet],
  };
}

function conditionHolds(span: HeldSpan, { field, value }: Condition): boolean {
  if (field === 'name') return span.name === value;
  if (field === 'status') return ['unset', 'ok', 'error'][span.statusCode] === value;
  if (field.startsWith('resource.')) return hasAttribute(span.resource, field.slice('resource.'.length), value);
  return hasAttribute(span.attributes, field.slice('span.'.length), value);
}

/**
 * `{ cond && cond … }` with cond `field = "string"` (a Go string literal, read here with
 * JSON.parse: the escapes TempoSource writes are the ones both share) or `status = error|ok|unset`.
 * Anything else is an error message, as Tempo refuses what it cannot parse.
 */
function parseTraceQl(q: string): Condition[] | string {
  const body = /^\s*\{(.*)\}\s*$/s.exec(q)?.[1];
  if (body === undefined) return `parse error: expected one spanset filter in braces, got ${JSON.stringify(q.slice(0, 80))}`;
  const conditions: Condition[] = [];
  const condition = /\s*(name|status|resource\.[\w.-]+|span\.[\w.-]+)\s*=\s*("(?:[^"\\]|\\.)*"|error|ok|unset)\s*(&&|$)/sy;
  let at = 0;
  while (at < body.length) {
    condition.lastIndex = at;
    const match = condition.exec(body);
    if (match === null) return `parse error at ${at}: ${JSON.stringify(body.slice(at, at + 40))}`;
    const [, field, literal] = match;
    const quoted = literal!.startsWith('"');
    if (field === 'status' ? quoted : !quoted) return `parse error: ${field} cannot be compared with ${literal}`;
    conditions.push({ field: field!, value: quoted ? (JSON.parse(literal!) as string) : literal! });
    at = condition.lastIndex;
    if (match[3] === '') break;
  }
  return conditions.length === 0 ? 'parse error: empty spanset filter' : conditions;
}
