/**
 * Reads the Jaeger query service's UI JSON (GET /api/traces and /api/traces/<id>): the
 * envelope `{data, total, limit, offset, errors}` of jaegertracing/jaeger
 * cmd/query/app/http_handler.go (structuredResponse) holding traces of
 * internal/uimodel/model.go. Spans stored as OTLP were turned into that model by the
 * collector-contrib translator (pkg/translator/jaeger/traces_to_jaegerproto.go), whose rules
 * this undoes: the parent is a CHILD_OF reference, links are FOLLOWS_FROM references, the
 * status is in the otel.status_code / error / otel.status_description tags, an event's name is
 * the `event` field of its log.
 */
import { ThreadlineError } from '../errors.js';
import type { SpanAttributes, SpanAttributeValue, SpanEvent, SpanLink, StoredSpan, StoredTrace } from './trace-model.js';
import { describe, isObject, type Json } from './json-value.js';

/** Thrown inside the reader and turned into TL_TRACE_SOURCE naming the source. */
class Malformed extends Error {}

/** Tags the translator adds from fields of the OTLP span, not from its attributes. */
const TRANSLATOR_TAGS: ReadonlySet<string> = new Set([
  'span.kind',
  'otel.status_code',
  'otel.status_description',
  'otel.scope.name',
  'otel.scope.version',
  'otel.library.name',
  'otel.library.version',
  'w3c.tracestate',
]);
/** contrib pkg/translator/jaeger constants.go: eventNameAttr. */
const EVENT_NAME_FIELD = 'event';
const HEX_ID = /^[0-9a-fA-F]+$/;

/**
 * The traces of a Jaeger UI API answer, ids as 32/16 lowercase hex digits. Throws
 * TL_TRACE_SOURCE, naming `where`, for anything that is not such an answer.
 */
export function tracesFromJaegerJson(body: unknown, where: string): StoredTrace[] {
  try {
    if (!isObject(body)) throw new Malformed(`the document is ${describe(body)}, not a JSON object`);
    const data = body['data'];
    if (data === null || data === undefined) {
      // Jaeger answers an error as data: null with the reason in errors[].
      const reasons = errorsOf(body);
      throw new Malformed(reasons === '' ? 'it has no "data" array' : `it has no traces, only errors: ${reasons}`);
    }
    if (!Array.isArray(data)) throw new Malformed(`"data" is ${describe(data)}, not an array`);
    return data.map((trace, index) => traceOf(trace, `data[${index}]`));
  } catch (error) {
    if (error instanceof Malformed) {
      throw new ThreadlineError('TL_TRACE_SOURCE', `${where} answered with something that is not Jaeger traces: ${error.message}`);
    }
    throw error;
  }
}

function traceOf(trace: unknown, at: string): StoredTrace {
  if (!isObject(trace)) throw new Malformed(`${at} is ${describe(trace)}, not a trace object`);
  const traceId = idOf(trace['traceID'], 32, `the traceID of ${at}`);
  const processes = trace['processes'] ?? {};
  if (!isObject(processes)) throw new Malformed(`the processes of ${at} are ${describe(processes)}, not an object`);
  const spans = trace['spans'];
  if (!Array.isArray(spans)) throw new Malformed(`the spans of ${at} are ${describe(spans)}, not an array`);
  return { traceId, spans: spans.map((span, index) => spanOf(span, processes, `${at}.spans[${index}]`)) };
}

function spanOf(span: unknown, processes: Json, at: string): StoredSpan {
  if (!isObject(span)) throw new Malformed(`${at} is ${describe(span)}, not an object`);
  const traceId = idOf(span['traceID'], 32, `the traceID of span ${at}`);
  const spanId = idOf(span['spanID'], 16, `the spanID of span ${at}`);
  const name = span['operationName'];
  if (typeof name !== 'string' || name === '') throw new Malformed(`the span at ${at} has no operationName`);
  const startUs = microsOf(span['startTime'], `the startTime of span ${at}`);
  const durationUs = span['duration'] === undefined ? 0 : microsOf(span['duration'], `the duration of span ${at}`);
  const tags = tagsOf(span['tags'], `the tags of span ${at}`);
  const { parentSpanId, links } = referencesOf(span, traceId, at);
  const service = serviceOf(span, processes, at);
  const statusMessage = tags['otel.status_description'];
  return {
    traceId,
    spanId,
    ...(parentSpanId === undefined ? {} : { parentSpanId }),
    name,
    ...(service === undefined ? {} : { service }),
    startMs: startUs / 1000,
    endMs: (startUs + durationUs) / 1000,
    attributes: attributesOf(tags),
    events: logsOf(span['logs'], at),
    links,
    status: statusOf(tags),
    ...(typeof statusMessage === 'string' && statusMessage !== '' ? { statusMessage } : {}),
  };
}

/** The first CHILD_OF reference in the same trace is the parent; every other reference was a link. */
function referencesOf(span: Json, traceId: string, at: string): { parentSpanId?: string; links: SpanLink[] } {
  const references = span['references'] ?? [];
  if (!Array.isArray(references)) throw new Malformed(`the references of span ${at} are ${describe(references)}, not an array`);
  let parentSpanId: string | undefined;
  const links: SpanLink[] = [];
  for (const [index, reference] of references.entries()) {
    const refAt = `${at}.references[${index}]`;
    if (!isObject(reference)) throw new Malformed(`${refAt} is ${describe(reference)}, not an object`);
    const link = {
      traceId: idOf(reference['traceID'], 32, `the traceID of ${refAt}`),
      spanId: idOf(reference['spanID'], 16, `the spanID of ${refAt}`),
    };
    if (parentSpanId === undefined && reference['refType'] === 'CHILD_OF' && link.traceId === traceId) parentSpanId = link.spanId;
    else links.push(link);
  }
  // parentSpanID is deprecated and no longer written, but an older query service may send it.
  const legacyParent = span['parentSpanID'];
  if (parentSpanId === undefined && typeof legacyParent === 'string' && legacyParent !== '' && !/^0+$/.test(legacyParent)) {
    parentSpanId = idOf(legacyParent, 16, `the parentSpanID of span ${at}`);
  }
  return { ...(parentSpanId === undefined ? {} : { parentSpanId }), links };
}

function serviceOf(span: Json, processes: Json, at: string): string | undefined {
  const processId = span['processID'];
  const process = isObject(span['process']) ? span['process'] : typeof processId === 'string' ? processes[processId] : undefined;
  if (process === undefined) return undefined;
  if (!isObject(process)) throw new Malformed(`the process of span ${at} is ${describe(process)}, not an object`);
  const service = process['serviceName'];
  return typeof service === 'string' && service !== '' ? service : undefined;
}

/** ERROR / OK from otel.status_code; without it, an `error` tag that is true means an error. */
function statusOf(tags: SpanAttributes): StoredSpan['status'] {
  const code = tags['otel.status_code'];
  if (code === 'ERROR') return 'error';
  if (code === 'OK') return 'ok';
  const error = tags['error'];
  return error === true || error === 'true' ? 'error' : 'unset';
}

/** The span's own attributes: the tags without those the translator made from other fields. */
function attributesOf(tags: SpanAttributes): SpanAttributes {
  const attributes: Record<string, SpanAttributeValue> = {};
  for (const [key, value] of Object.entries(tags)) {
    if (TRANSLATOR_TAGS.has(key)) continue;
    // The translator adds error=true to an ERROR span; an `error` attribute of the span's own is kept.
    if (key === 'error' && value === true && tags['otel.status_code'] === 'ERROR') continue;
    attributes[key] = value;
  }
  return attributes;
}

function logsOf(logs: unknown, at: string): SpanEvent[] {
  if (logs === undefined || logs === null) return [];
  if (!Array.isArray(logs)) throw new Malformed(`the logs of span ${at} are ${describe(logs)}, not an array`);
  return logs.map((log, index) => {
    const logAt = `${at}.logs[${index}]`;
    if (!isObject(log)) throw new Malformed(`${logAt} is ${describe(log)}, not an object`);
    const fields = tagsOf(log['fields'], `the fields of ${logAt}`);
    const { [EVENT_NAME_FIELD]: name, ...attributes } = fields;
    return {
      name: typeof name === 'string' ? name : '',
      timeMs: microsOf(log['timestamp'], `the timestamp of ${logAt}`) / 1000,
      attributes: typeof name === 'string' ? attributes : fields,
    };
  });
}

/** Jaeger KeyValues (`{key, type, value}`) as attributes; an absent list is none. */
function tagsOf(tags: unknown, what: string): SpanAttributes {
  if (tags === undefined || tags === null) return {};
  if (!Array.isArray(tags)) throw new Malformed(`${what} are ${describe(tags)}, not an array`);
  const attributes: Record<string, SpanAttributeValue> = {};
  for (const [index, tag] of tags.entries()) {
    if (!isObject(tag) || typeof tag['key'] !== 'string') throw new Malformed(`${what}[${index}] is not a {key, type, value} tag`);
    attributes[tag['key']] = tagValueOf(tag, `tag "${tag['key']}" in ${what}`);
  }
  return attributes;
}

function tagValueOf(tag: Json, what: string): SpanAttributeValue {
  const value = tag['value'];
  switch (tag['type'] ?? 'string') {
    case 'string':
    case 'binary': // Go writes []byte as base64 text
      if (typeof value !== 'string') throw new Malformed(`${what} is ${describe(value)}, not a string`);
      return value;
    case 'bool':
      if (typeof value === 'boolean') return value;
      if (value === 'true' || value === 'false') return value === 'true';
      throw new Malformed(`${what} is ${describe(value)}, not a bool`);
    case 'int64':
    case 'float64': {
      // from_domain.go writes an int64 beyond ±(2^53-1) as a decimal string, so it keeps its digits.
      if (typeof value === 'string' && /^-?\d+$/.test(value)) return Number.isSafeInteger(Number(value)) ? Number(value) : value;
      if (typeof value === 'number') return value;
      throw new Malformed(`${what} is ${describe(value)}, not a number`);
    }
    default:
      throw new Malformed(`${what} has type ${describe(tag['type'])}, not string, bool, int64, float64 or binary`);
  }
}

/** Microseconds since the epoch (or a duration in µs): a non-negative number. */
function microsOf(value: unknown, what: string): number {
  if (typeof value === 'number' && Number.isFinite(value) && value >= 0) return value;
  throw new Malformed(`${what} is ${describe(value)}, not a count of microseconds`);
}

/**
 * A hex id as `digits` lowercase hex digits: Jaeger writes a trace id whose high 64 bits are
 * zero as 16 digits (jaeger-idl model/v1/ids.go TraceID.String), and other writers drop
 * leading zeros altogether.
 */
function idOf(value: unknown, digits: 32 | 16, what: string): string {
  if (typeof value !== 'string' || !HEX_ID.test(value) || value.length > digits || /^0+$/.test(value)) {
    throw new Malformed(`${what} is ${describe(value)}, not an id of up to ${digits} hex digits`);
  }
  return value.toLowerCase().padStart(digits, '0');
}

function errorsOf(body: Json): string {
  const errors = body['errors'];
  if (!Array.isArray(errors)) return '';
  return errors
    .map((error) => (isObject(error) && typeof error['msg'] === 'string' ? error['msg'] : ''))
    .filter((message) => message !== '')
    .slice(0, 3)
    .join('; ')
    .slice(0, 300);
}

