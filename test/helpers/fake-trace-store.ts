/**
 * What the fake Jaeger and the fake Tempo share: the spans they hold, fed as OTLP/JSON
 * ExportTraceServiceRequests (the lines of a trace file), a loopback HTTP server that counts
 * requests, and the failures a test can ask for.
 */
import { readFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** An OTLP/JSON KeyValue: `{key, value: AnyValue}`. */
export interface OtlpKeyValue {
  readonly key: string;
  readonly value: Record<string, unknown>;
}

/** One span with its resource and scope, ids lowercase hex, times in ns. */
export interface HeldSpan {
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId?: string;
  readonly name: string;
  /** OTLP SpanKind number; 0 when unspecified. */
  readonly kind: number;
  readonly startNs: bigint;
  readonly endNs: bigint;
  readonly attributes: readonly OtlpKeyValue[];
  readonly events: readonly { readonly timeNs: bigint; readonly name: string; readonly attributes: readonly OtlpKeyValue[] }[];
  readonly links: readonly { readonly traceId: string; readonly spanId: string; readonly attributes: readonly OtlpKeyValue[] }[];
  /** 0 unset, 1 ok, 2 error. */
  readonly statusCode: number;
  readonly statusMessage?: string;
  readonly traceState?: string;
  readonly flags?: number;
  readonly resource: readonly OtlpKeyValue[];
  readonly service: string;
  readonly scope: { readonly name: string; readonly version?: string };
}

/** The spans of a store, by trace id in order of arrival. */
export class HeldTraces {
  private readonly traces = new Map<string, HeldSpan[]>();

  /** Adds the spans of an OTLP/JSON ExportTraceServiceRequest, as our trace file holds them. */
  add(request: unknown): void {
    const resourceSpans = (request as { resourceSpans?: unknown[] }).resourceSpans ?? [];
    for (const entry of resourceSpans as Record<string, unknown>[]) {
      const resource = ((entry['resource'] as { attributes?: OtlpKeyValue[] } | undefined)?.attributes ?? []) as OtlpKeyValue[];
      const service = stringOf(resource.find((attribute) => attribute.key === 'service.name')?.value) ?? '';
      for (const scopeSpans of (entry['scopeSpans'] ?? []) as Record<string, unknown>[]) {
        const scope = (scopeSpans['scope'] ?? { name: '' }) as { name: string; version?: string };
        for (const span of (scopeSpans['spans'] ?? []) as Record<string, unknown>[]) this.hold(heldSpanOf(span, resource, service, scope));
      }
    }
  }

  /** Adds every line of a trace file. */
  addFile(path: string): void {
    for (const line of readFileSync(path, 'utf8').split('\n')) if (line.trim() !== '') this.add(JSON.parse(line));
  }

  /** Each trace's spans, newest trace (by its latest start) first. */
  newestFirst(): HeldSpan[][] {
    const latest = (spans: HeldSpan[]) => spans.reduce((max, span) => (span.startNs > max ? span.startNs : max), 0n);
    return [...this.traces.values()].sort((a, b) => (latest(b) > latest(a) ? 1 : latest(b) < latest(a) ? -1 : 0));
  }

  get(traceId: string): HeldSpan[] | undefined {
    return this.traces.get(traceId);
  }

  services(): string[] {
    return [...new Set([...this.traces.values()].flat().map((span) => span.service))];
  }

  private hold(span: HeldSpan): void {
    let list = this.traces.get(span.traceId);
    if (list === undefined) this.traces.set(span.traceId, (list = []));
    list.push(span);
  }
}

function heldSpanOf(span: Record<string, unknown>, resource: OtlpKeyValue[], service: string, scope: { name: string; version?: string }): HeldSpan {
  const status = (span['status'] ?? {}) as { code?: number; message?: string };
  const parent = span['parentSpanId'] as string | undefined;
  const traceState = span['traceState'] as string | undefined;
  const flags = span['flags'] as number | undefined;
  return {
    traceId: String(span['traceId']).toLowerCase(),
    spanId: String(span['spanId']).toLowerCase(),
    ...(parent ? { parentSpanId: parent.toLowerCase() } : {}),
    name: String(span['name']),
    kind: Number(span['kind'] ?? 0),
    startNs: BigInt(span['startTimeUnixNano'] as string),
    endNs: BigInt(span['endTimeUnixNano'] as string),
    attributes: (span['attributes'] ?? []) as OtlpKeyValue[],
    events: ((span['events'] ?? []) as Record<string, unknown>[]).map((event) => ({
      timeNs: BigInt(event['timeUnixNano'] as string),
      name: String(event['name'] ?? ''),
      attributes: (event['attributes'] ?? []) as OtlpKeyValue[],
    })),
    links: ((span['links'] ?? []) as Record<string, unknown>[]).map((link) => ({
      traceId: String(link['traceId']).toLowerCase(),
      spanId: String(link['spanId']).toLowerCase(),
      attributes: (link['attributes'] ?? []) as OtlpKeyValue[],
    })),
    statusCode: Number(status.code ?? 0),
    ...(status.message ? { statusMessage: status.message } : {}),
    ...(traceState ? { traceState } : {}),
    ...(flags ? { flags } : {}),
    resource,
    service,
    scope: { name: scope.name, ...(scope.version ? { version: scope.version } : {}) },
  };
}

/** An AnyValue as pdata's AsString() renders it: scalars as text, arrays and maps as JSON. */
export function valueAsString(value: Record<string, unknown> | undefined): string | undefined {
  if (value === undefined) return undefined;
  const scalar = stringOf(value);
  if (scalar !== undefined) return scalar;
  return JSON.stringify(plainValue(value));
}

function stringOf(value: Record<string, unknown> | undefined): string | undefined {
  if (value === undefined) return undefined;
  for (const key of ['stringValue', 'boolValue', 'intValue', 'doubleValue', 'bytesValue']) if (key in value) return String(value[key]);
  return undefined;
}

function plainValue(value: Record<string, unknown>): unknown {
  const array = value['arrayValue'] as { values?: Record<string, unknown>[] } | undefined;
  if (array !== undefined) return (array.values ?? []).map(plainValue);
  const map = value['kvlistValue'] as { values?: OtlpKeyValue[] } | undefined;
  if (map !== undefined) return Object.fromEntries((map.values ?? []).map((entry) => [entry.key, plainValue(entry.value)]));
  if ('intValue' in value) return Number(value['intValue']);
  for (const key of ['stringValue', 'boolValue', 'doubleValue', 'bytesValue']) if (key in value) return value[key];
  return null;
}

/** An AnyValue as proto3 JSON writes it (pdata and gogo jsonpb alike): int64 as a decimal string. */
export function protoJsonValue(value: Record<string, unknown>): Record<string, unknown> {
  if ('intValue' in value) return { intValue: String(value['intValue']) };
  const array = value['arrayValue'] as { values?: Record<string, unknown>[] } | undefined;
  if (array !== undefined) return { arrayValue: { values: (array.values ?? []).map(protoJsonValue) } };
  const map = value['kvlistValue'] as { values?: OtlpKeyValue[] } | undefined;
  if (map !== undefined) return { kvlistValue: { values: (map.values ?? []).map(protoJsonKeyValue) } };
  return value;
}

export function protoJsonKeyValue(entry: OtlpKeyValue): OtlpKeyValue {
  return { key: entry.key, value: protoJsonValue(entry.value) };
}

/** Whether the string form of `key` in `attributes` is `value`. */
export function hasAttribute(attributes: readonly OtlpKeyValue[], key: string, value: string): boolean {
  return attributes.some((attribute) => attribute.key === key && valueAsString(attribute.value) === value);
}

/** A failure a fake can be told to give: `refuse` closes the server for good; `not-traces` is JSON of another shape. */
export type FakeFailure = 'refuse' | 'status-500' | 'empty' | 'malformed' | 'not-traces';

export interface FakeRequest {
  readonly path: string;
  readonly query: URLSearchParams;
  readonly headers: IncomingHttpHeaders;
}

export interface FakeAnswer {
  readonly status: number;
  readonly contentType?: string;
  readonly body: string;
}

export interface FakeServer {
  /** http://127.0.0.1:<port> */
  readonly url: string;
  /** Every request, in order. */
  readonly requests: FakeRequest[];
  /** From now on, every request fails this way (undefined: answer normally again, unless refused). */
  fail(failure: FakeFailure | undefined): Promise<void>;
  close(): Promise<void>;
}

/** A JSON answer with the status and content type the real server gives. */
export function json(status: number, body: unknown, contentType = 'application/json'): FakeAnswer {
  return { status, contentType, body: JSON.stringify(body) };
}

/** Go's http.Error: text/plain, the message and a newline, whatever the message is. */
export function goHttpError(status: number, message: string): FakeAnswer {
  return { status, contentType: 'text/plain; charset=utf-8', body: `${message}\n` };
}

/** A loopback server answering GETs with `handle`, or with the failure it was told to give. */
export async function startFakeServer(handle: (request: FakeRequest) => FakeAnswer): Promise<FakeServer> {
  const requests: FakeRequest[] = [];
  let failure: FakeFailure | undefined;
  const server: Server = createServer((incoming, response) => {
    const url = new URL(incoming.url ?? '/', 'http://127.0.0.1');
    const request = { path: url.pathname, query: url.searchParams, headers: incoming.headers };
    requests.push(request);
    incoming.resume();
    let answer: FakeAnswer;
    if (failure === 'status-500') answer = goHttpError(500, 'internal error: storage is down');
    else if (failure === 'empty') answer = { status: 200, contentType: 'application/json', body: '' };
    else if (failure === 'malformed') answer = { status: 200, contentType: 'application/json', body: '{"data": [{"traceID": "ab' };
    else if (failure === 'not-traces') answer = json(200, { status: 'ok', message: 'a proxy answered' });
    else {
      try {
        answer = handle(request);
      } catch (error) {
        answer = goHttpError(500, error instanceof Error ? error.message : String(error));
      }
    }
    response.writeHead(answer.status, { 'content-type': answer.contentType ?? 'text/plain; charset=utf-8' });
    response.end(answer.body);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    fail: async (next) => {
      failure = next;
      if (next === 'refuse' && server.listening) await close();
    },
    close: () => (server.listening ? close() : Promise.resolve()),
  };
}

/** ns since the epoch as µs, as Jaeger's model holds times. */
export function micros(ns: bigint): number {
  return Number(ns / 1000n);
}
