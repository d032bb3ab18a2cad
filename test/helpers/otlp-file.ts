import { readFileSync } from 'node:fs';

export interface OtlpSpan {
  readonly name: string;
  readonly kind: number;
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId?: string;
  readonly attributes: readonly { key: string; value: { stringValue?: string } }[];
}

/** One line of a trace file: an OTLP/JSON ExportTraceServiceRequest. */
export interface OtlpLine {
  readonly resourceSpans: readonly {
    readonly resource: { readonly attributes: readonly { key: string; value: { stringValue?: string } }[] };
    readonly scopeSpans: readonly { readonly scope: { readonly name: string }; readonly spans: readonly OtlpSpan[] }[];
  }[];
}

/** The lines of a trace file, parsed; the file must end with a newline. */
export function readOtlpLines(path: string): OtlpLine[] {
  const text = readFileSync(path, 'utf8');
  if (!text.endsWith('\n')) throw new Error(`${path} does not end with a newline`);
  return text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as OtlpLine);
}

/** Every span in a trace file, in order. */
export function readOtlpSpans(path: string): OtlpSpan[] {
  return readOtlpLines(path).flatMap((line) => line.resourceSpans.flatMap((resource) => resource.scopeSpans.flatMap((scope) => scope.spans)));
}

/** A string attribute of an exported span. */
export function otlpAttribute(span: OtlpSpan, key: string): string | undefined {
  return span.attributes.find((entry) => entry.key === key)?.value.stringValue;
}
