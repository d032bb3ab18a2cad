import protobuf from 'protobufjs/minimal.js';
import { startLocalServer, type LocalServer } from '../../src/testing/local-server.js';

type AttributeRecord = Readonly<Record<string, string | number | boolean>>;

/** A span as an OTLP receiver sees it, decoded from the wire. */
export interface ReceivedSpan {
  readonly traceId: string;
  readonly spanId: string;
  readonly name: string;
  readonly attributes: AttributeRecord;
  /** The attributes of the resource the span was exported under (service.name, service.version, …). */
  readonly resource: AttributeRecord;
}

/**
 * A local OTLP/HTTP traces receiver (POST /v1/traces) that decodes real protobuf and JSON
 * export requests, so tests see what a collector would.
 */
export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  readonly contentTypes = new Set<string>();

  private constructor(private readonly server: LocalServer) {}

  static async start(): Promise<OtlpReceiver> {
    let receiver!: OtlpReceiver;
    const server = await startLocalServer((request) => {
      const type = request.headers['content-type'] ?? '';
      receiver.contentTypes.add(type);
      receiver.spans.push(...(type.includes('json') ? decodeJson(request.body) : decodeProtobuf(request.raw)));
      return { status: 200, headers: { 'content-type': type }, body: '' };
    });
    receiver = new OtlpReceiver(server);
    return receiver;
  }

  get url(): string {
    return `${this.server.origin}/v1/traces`;
  }

  close(): Promise<void> {
    return this.server.close();
  }
}

type Reader = protobuf.Reader;

/** Visits each field of a message; `visit` returns false for fields it did not read. */
function eachField(bytes: Uint8Array, visit: (field: number, reader: Reader) => boolean): void {
  const reader = protobuf.Reader.create(bytes);
  while (reader.pos < reader.len) {
    const tag = reader.uint32();
    if (!visit(tag >>> 3, reader)) reader.skipType(tag & 7);
  }
}

// Field numbers from opentelemetry-proto: trace/v1/trace.proto, resource/v1/resource.proto and common/v1/common.proto.
/** The spans of an ExportTraceServiceRequest's protobuf bytes, as an OTLP gRPC or HTTP collector reads them. */
export function decodeProtobuf(body: Uint8Array): ReceivedSpan[] {
  // ExportTraceServiceRequest.resource_spans (1) → ResourceSpans.resource (1) and .scope_spans (2) → ScopeSpans.spans (2)
  return repeated(body, 1).flatMap((resourceSpans) => {
    const resource: Record<string, string | number | boolean> = {};
    // Resource.attributes (1) are KeyValues, as a span's.
    for (const bytes of repeated(resourceSpans, 1)) for (const kv of repeated(bytes, 1)) addKeyValue(resource, kv);
    return repeated(resourceSpans, 2).flatMap((scopeSpans) => repeated(scopeSpans, 2).map((span) => decodeSpan(span, resource)));
  });
}

/** The bytes of every occurrence of a length-delimited field. */
function repeated(bytes: Uint8Array, field: number): Uint8Array[] {
  const found: Uint8Array[] = [];
  eachField(bytes, (f, reader) => {
    if (f !== field) return false;
    found.push(reader.bytes());
    return true;
  });
  return found;
}

function decodeSpan(bytes: Uint8Array, resource: AttributeRecord): ReceivedSpan {
  let traceId = '';
  let spanId = '';
  let name = '';
  const attributes: Record<string, string | number | boolean> = {};
  eachField(bytes, (field, r) => {
    if (field === 1) traceId = Buffer.from(r.bytes()).toString('hex');
    else if (field === 2) spanId = Buffer.from(r.bytes()).toString('hex');
    else if (field === 5) name = r.string();
    else if (field === 9) addKeyValue(attributes, r.bytes());
    else return false;
    return true;
  });
  return { traceId, spanId, name, attributes, resource };
}

/** Adds a KeyValue (key 1, AnyValue 2: string 1, bool 2, int 3, double 4) to `record`. */
function addKeyValue(record: Record<string, string | number | boolean>, bytes: Uint8Array): void {
  let key = '';
  let value: string | number | boolean = '';
  eachField(bytes, (f, kv) => {
    if (f === 1) key = kv.string();
    else if (f === 2) {
      eachField(kv.bytes(), (g, any) => {
        if (g === 1) value = any.string();
        else if (g === 2) value = any.bool();
        else if (g === 3) value = Number(any.int64());
        else if (g === 4) value = any.double();
        else return false;
        return true;
      });
    } else return false;
    return true;
  });
  record[key] = value;
}

interface JsonAnyValue {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: number | string;
  doubleValue?: number;
}

type JsonAttributes = { key: string; value: JsonAnyValue }[] | undefined;

function decodeJson(text: string): ReceivedSpan[] {
  const request = JSON.parse(text) as {
    resourceSpans: {
      resource?: { attributes?: JsonAttributes };
      scopeSpans: { spans: { traceId: string; spanId: string; name: string; attributes?: JsonAttributes }[] }[];
    }[];
  };
  return request.resourceSpans.flatMap((rs) => {
    const resource = jsonAttributes(rs.resource?.attributes);
    return rs.scopeSpans.flatMap((ss) =>
      ss.spans.map((span) => ({ traceId: span.traceId, spanId: span.spanId, name: span.name, attributes: jsonAttributes(span.attributes), resource })),
    );
  });
}

function jsonAttributes(attributes: JsonAttributes): AttributeRecord {
  return Object.fromEntries(
    (attributes ?? []).map(({ key, value }) => [
      key,
      value.stringValue ?? value.boolValue ?? (value.intValue !== undefined ? Number(value.intValue) : value.doubleValue ?? ''),
    ]),
  );
}
