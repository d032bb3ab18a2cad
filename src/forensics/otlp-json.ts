/**
 * Reads OTLP/JSON trace documents (https://opentelemetry.io/docs/specs/otlp/#json-protobuf-encoding)
 * into the forensics span model. One reader serves every source: the local trace file
 * (an ExportTraceServiceRequest per line), Jaeger v2's api_v3 (`{result: TracesData}`,
 * cmd/query/app/apiv3/http_gateway.go) and Grafana Tempo (`{batches: [...]}` from
 * /api/traces/<id> and `{trace: {...}}` from /api/v2/traces/<id>, pkg/tempopb/tempo.proto),
 * whose ids are proto bytes in base64.
 */
import { ThreadlineError } from '../errors.js';
import type { SpanAttributes, SpanAttributeValue, SpanEvent, SpanLink, StoredSpan } from './trace-model.js';
import { describe, isObject, type Json } from './json-value.js';

/** A document that is not OTLP/JSON traces; `problem` says what is wrong, for callers that name their own place. */
export class TraceDocumentError extends ThreadlineError {
  readonly problem: string;

  constructor(where: string, problem: string) {
    super('TL_TRACE_SOURCE', `${where} answered with something that is not OTLP/JSON traces: ${problem}`);
    this.name = 'TraceDocumentError';
    this.problem = problem;
  }
}

/** Thrown inside the reader and turned into a TraceDocumentError naming the source. */
class Malformed extends Error {}

const HEX_TRACE_ID = /^[0-9a-fA-F]{32}$/;
const HEX_SPAN_ID = /^[0-9a-fA-F]{16}$/;
const BASE64 = /^[A-Za-z0-9+/_-]+={0,2}$/;
const NANOS_PER_MS = 1_000_000n;
const MAX_NESTING = 32;

const STATUS_CODES: Readonly<Record<string, StoredSpan['status']>> = {
  '0': 'unset',
  '1': 'ok',
  '2': 'error',
  STATUS_CODE_UNSET: 'unset',
  STATUS_CODE_OK: 'ok',
  STATUS_CODE_ERROR: 'error',
};

/**
 * The spans of an OTLP/JSON document: `{resourceSpans}`, `{result: {resourceSpans}}`,
 * `{batches}` or `{trace: {resourceSpans | batches}}`. Throws TraceDocumentError
 * (TL_TRACE_SOURCE), naming `where`, for anything else.
 */
export function spansFromOtlpJson(body: unknown, where: string): StoredSpan[] {
  try {
    return resourceSpansOf(body).flatMap((resourceSpans, index) => spansOfResource(resourceSpans, `resourceSpans[${index}]`));
  } catch (error) {
    if (error instanceof Malformed) throw new TraceDocumentError(where, error.message);
    throw error;
  }
}

/** The resourceSpans array of whichever envelope `body` is. */
function resourceSpansOf(body: unknown): unknown[] {
  if (!isObject(body)) throw new Malformed(`the document is ${describe(body)}, not a JSON object`);
  if ('resourceSpans' in body) return arrayField(body, 'resourceSpans', 'the document');
  if ('batches' in body) return arrayField(body, 'batches', 'the document');
  for (const envelope of ['result', 'trace'] as const) {
    if (!(envelope in body)) continue;
    const inner = body[envelope];
    if (!isObject(inner)) throw new Malformed(`"${envelope}" is ${describe(inner)}, not an object`);
    // proto3 JSON omits an empty repeated field: a trace with no spans is `{}`.
    if ('batches' in inner) return arrayField(inner, 'batches', `"${envelope}"`);
    return 'resourceSpans' in inner ? arrayField(inner, 'resourceSpans', `"${envelope}"`) : [];
  }
  throw new Malformed('a JSON object without resourceSpans, batches, result or trace');
}

function spansOfResource(resourceSpans: unknown, at: string): StoredSpan[] {
  if (!isObject(resourceSpans)) throw new Malformed(`${at} is ${describe(resourceSpans)}, not an object`);
  const resource = optionalObject(resourceSpans, 'resource', at);
  const resourceAttributes = resource === undefined ? {} : attributesOf(resource, `${at}.resource`);
  const serviceName = resourceAttributes['service.name'];
  const service = typeof serviceName === 'string' ? serviceName : undefined;
  // Before OTLP 0.15 the scope was the "instrumentation library"; older Tempo still says so.
  const scopesKey = 'scopeSpans' in resourceSpans ? 'scopeSpans' : 'instrumentationLibrarySpans';
  const scopes = optionalArray(resourceSpans, scopesKey, at);
  return scopes.flatMap((scope, scopeIndex) => {
    const scopeAt = `${at}.${scopesKey}[${scopeIndex}]`;
    if (!isObject(scope)) throw new Malformed(`${scopeAt} is ${describe(scope)}, not an object`);
    return optionalArray(scope, 'spans', scopeAt).map((span, spanIndex) => spanOf(span, service, `${scopeAt}.spans[${spanIndex}]`));
  });
}

function spanOf(span: unknown, service: string | undefined, at: string): StoredSpan {
  if (!isObject(span)) throw new Malformed(`${at} is ${describe(span)}, not an object`);
  const name = span['name'];
  if (typeof name !== 'string' || name === '') throw new Malformed(`the span at ${at} has no name`);
  const traceId = idOf(span['traceId'], 16, `the traceId of span ${at}`);
  const spanId = idOf(span['spanId'], 8, `the spanId of span ${at}`);
  const parent = span['parentSpanId'];
  // An absent, empty or all-zero parent id all mean "a root span".
  const parentSpanId = parent === undefined || parent === '' ? undefined : idOf(parent, 8, `the parentSpanId of span ${at}`, true);
  if (span['startTimeUnixNano'] === undefined) throw new Malformed(`the span at ${at} has no startTimeUnixNano`);
  const startMs = msOf(span['startTimeUnixNano'], `the startTimeUnixNano of span ${at}`);
  const endMs = span['endTimeUnixNano'] === undefined ? startMs : msOf(span['endTimeUnixNano'], `the endTimeUnixNano of span ${at}`);
  const status = optionalObject(span, 'status', at);
  const statusMessage = status?.['message'];
  if (statusMessage !== undefined && typeof statusMessage !== 'string') {
    throw new Malformed(`the status message of span ${at} is not a string`);
  }
  return {
    traceId,
    spanId,
    ...(parentSpanId === undefined ? {} : { parentSpanId }),
    name,
    ...(service === undefined ? {} : { service }),
    startMs,
    endMs,
    attributes: attributesOf(span, at),
    events: optionalArray(span, 'events', at).map((event, index) => eventOf(event, `${at}.events[${index}]`)),
    links: optionalArray(span, 'links', at).map((link, index) => linkOf(link, `${at}.links[${index}]`)),
    status: statusOf(status?.['code'], at),
    ...(statusMessage === undefined || statusMessage === '' ? {} : { statusMessage }),
  };
}

function eventOf(event: unknown, at: string): SpanEvent {
  if (!isObject(event)) throw new Malformed(`${at} is ${describe(event)}, not an object`);
  const name = event['name'] ?? '';
  if (typeof name !== 'string') throw new Malformed(`the name of event ${at} is not a string`);
  const time = event['timeUnixNano'];
  if (time === undefined) throw new Malformed(`the event at ${at} has no timeUnixNano`);
  return { name, timeMs: msOf(time, `the timeUnixNano of event ${at}`), attributes: attributesOf(event, at) };
}

function linkOf(link: unknown, at: string): SpanLink {
  if (!isObject(link)) throw new Malformed(`${at} is ${describe(link)}, not an object`);
  return { traceId: idOf(link['traceId'], 16, `the traceId of link ${at}`), spanId: idOf(link['spanId'], 8, `the spanId of link ${at}`) };
}

function statusOf(code: unknown, at: string): StoredSpan['status'] {
  if (code === undefined) return 'unset';
  const status = typeof code === 'string' || typeof code === 'number' ? STATUS_CODES[String(code)] : undefined;
  if (status === undefined) throw new Malformed(`the status code of span ${at} is ${describe(code)}, not 0, 1, 2 or STATUS_CODE_*`);
  return status;
}

/** The `attributes` of `owner` (a resource, span or event); an absent list is none. */
function attributesOf(owner: Json, at: string): SpanAttributes {
  const attributes: Record<string, SpanAttributeValue> = {};
  for (const [index, entry] of optionalArray(owner, 'attributes', at).entries()) {
    const entryAt = `${at}.attributes[${index}]`;
    if (!isObject(entry) || typeof entry['key'] !== 'string') throw new Malformed(`${entryAt} is not a {key, value} pair`);
    attributes[entry['key']] = attributeValueOf(entry['value'], `attribute "${entry['key']}" at ${entryAt}`);
  }
  return attributes;
}

function attributeValueOf(value: unknown, what: string): SpanAttributeValue {
  if (value === undefined) return '';
  if (!isObject(value)) throw new Malformed(`${what} has a value that is ${describe(value)}, not an AnyValue`);
  if (isObject(value['arrayValue'])) {
    return optionalArray(value['arrayValue'], 'values', what).map((item) => scalarOf(item, what) ?? renderValue(item));
  }
  return scalarOf(value, what) ?? renderValue(value);
}

/** A string, number or boolean AnyValue; undefined for the other kinds (kvlist, bytes, arrays). */
function scalarOf(value: unknown, what: string): string | number | boolean | undefined {
  if (!isObject(value)) throw new Malformed(`${what} holds ${describe(value)}, not an AnyValue`);
  if ('stringValue' in value) return typed(value['stringValue'], 'string', what);
  if ('boolValue' in value) return typed(value['boolValue'], 'boolean', what);
  if ('doubleValue' in value) return numberOf(value['doubleValue'], what);
  if ('intValue' in value) {
    const int = value['intValue'];
    // int64 is a JSON string in proto3 JSON; one past 2^53 stays a string rather than lose digits.
    if (typeof int === 'string' && /^-?\d+$/.test(int) && !Number.isSafeInteger(Number(int))) return int;
    return numberOf(int, what);
  }
  // proto3 JSON omits an empty string: an AnyValue with no field is "".
  return Object.keys(value).length === 0 ? '' : undefined;
}

/** kvlist, bytes (base64) and nested arrays as text: bytes as their base64, the rest as JSON. */
function renderValue(value: unknown): string {
  if (isObject(value) && typeof value['bytesValue'] === 'string') return value['bytesValue'];
  return JSON.stringify(plain(value));
}

/** An AnyValue as plain JSON (a kvlist as an object), for rendering nested values. */
function plain(value: unknown, depth = 0): unknown {
  if (!isObject(value)) return value ?? null;
  // A hostile answer could nest deeper than the stack goes.
  if (depth > MAX_NESTING) return '…';
  const array = value['arrayValue'];
  if (isObject(array)) return (Array.isArray(array['values']) ? array['values'] : []).map((item) => plain(item, depth + 1));
  const kvlist = value['kvlistValue'];
  if (isObject(kvlist)) {
    const entries = (Array.isArray(kvlist['values']) ? kvlist['values'] : []).filter(isObject);
    return Object.fromEntries(entries.map((entry) => [String(entry['key']), plain(entry['value'], depth + 1)]));
  }
  for (const key of ['stringValue', 'boolValue', 'intValue', 'doubleValue', 'bytesValue']) if (key in value) return value[key];
  return null;
}

function typed<T extends 'string' | 'boolean'>(value: unknown, type: T, what: string): T extends 'string' ? string : boolean {
  if (typeof value !== type) throw new Malformed(`${what} is ${describe(value)}, not a ${type}`);
  return value as T extends 'string' ? string : boolean;
}

function numberOf(value: unknown, what: string): number {
  // proto3 JSON writes the non-finite doubles as strings.
  if (value === 'NaN' || value === 'Infinity' || value === '-Infinity') return Number(value);
  const number = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
  if (typeof number !== 'number' || Number.isNaN(number)) throw new Malformed(`${what} is ${describe(value)}, not a number`);
  return number;
}

/** Nanoseconds since the epoch (a decimal string or a number) as milliseconds, keeping the fraction. */
function msOf(value: unknown, what: string): number {
  if (typeof value === 'number' && Number.isFinite(value) && value >= 0) return value / 1e6;
  if (typeof value === 'string' && /^\d+$/.test(value)) {
    // Through BigInt: 1.7e18 ns is past 2^53, and Number() would round it by hundreds of ns.
    const nanos = BigInt(value);
    return Number(nanos / NANOS_PER_MS) + Number(nanos % NANOS_PER_MS) / 1e6;
  }
  throw new Malformed(`${what} is ${describe(value)}, not a count of nanoseconds`);
}

/**
 * A trace id (16 bytes) or span id (8 bytes), in hex or in base64 (proto bytes in jsonpb, as
 * Tempo writes them), as lowercase hex. The lengths do not overlap: 32/16 hex digits against
 * 24/12 base64 characters (22/11 unpadded).
 */
function idOf(value: unknown, bytes: 16 | 8, what: string): string;
function idOf(value: unknown, bytes: 16 | 8, what: string, zeroIsNone: true): string | undefined;
function idOf(value: unknown, bytes: 16 | 8, what: string, zeroIsNone = false): string | undefined {
  if (typeof value !== 'string') throw new Malformed(`${what} is ${describe(value)}, not an id`);
  let hex: string | undefined;
  if ((bytes === 16 ? HEX_TRACE_ID : HEX_SPAN_ID).test(value)) hex = value.toLowerCase();
  else if (BASE64.test(value)) {
    const decoded = Buffer.from(value, value.includes('-') || value.includes('_') ? 'base64url' : 'base64');
    if (decoded.length === bytes) hex = decoded.toString('hex');
  }
  if (hex === undefined) throw new Malformed(`${what} is "${value.slice(0, 64)}", not ${bytes * 2} hex digits or ${bytes} bytes in base64`);
  if (/^0+$/.test(hex)) {
    if (zeroIsNone) return undefined;
    throw new Malformed(`${what} is all zeros, which OTLP calls invalid`);
  }
  return hex;
}

function arrayField(owner: Json, key: string, at: string): unknown[] {
  const value = owner[key];
  if (!Array.isArray(value)) throw new Malformed(`${key} in ${at} is ${describe(value)}, not an array`);
  return value;
}

/** An array field proto3 JSON may omit (or write as null) when it is empty. */
function optionalArray(owner: Json, key: string, at: string): unknown[] {
  const value = owner[key];
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw new Malformed(`${key} of ${at} is ${describe(value)}, not an array`);
  return value;
}

function optionalObject(owner: Json, key: string, at: string): Json | undefined {
  const value = owner[key];
  if (value === undefined || value === null) return undefined;
  if (!isObject(value)) throw new Malformed(`${key} of ${at} is ${describe(value)}, not an object`);
  return value;
}

