import type { Context, TextMapGetter, TextMapPropagator, TextMapSetter } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { readTracestate } from './read-tracestate.js';

const TRACEPARENT = 'traceparent';
const TRACESTATE = 'tracestate';
/** version "-" trace-id "-" parent-id "-" flags: the fields every version starts with. */
const VERSION_00_LENGTH = 55;

/**
 * OpenTelemetry's W3C trace-context propagator, fed what the W3C Trace Context spec says a
 * receiver reads: a traceparent of a future version (not 00, not ff) is parsed from its
 * first 55 characters when more fields follow after a '-', whatever its length; surrounding
 * optional whitespace is ignored; a tracestate that is not a valid list is dropped, and one
 * over 512 characters is cut member by member rather than dropped whole (readTracestate).
 * Injection is unchanged.
 */
export class TraceContextPropagator implements TextMapPropagator {
  private readonly w3c = new W3CTraceContextPropagator();

  inject(ctx: Context, carrier: unknown, setter: TextMapSetter): void {
    this.w3c.inject(ctx, carrier, setter);
  }

  extract(ctx: Context, carrier: unknown, getter: TextMapGetter): Context {
    return this.w3c.extract(ctx, carrier, {
      keys: (from) => getter.keys(from),
      get: (from, key) => {
        const value = getter.get(from, key);
        if (key === TRACEPARENT) return readableTraceparent(value);
        if (key === TRACESTATE) return validTracestate(value);
        return value;
      },
    });
  }

  fields(): string[] {
    return this.w3c.fields();
  }
}

/**
 * The part of a traceparent OpenTelemetry's parser can judge: trimmed of OWS and, for a
 * future version, cut to its first 55 characters when the 56th is '-' (the start of fields
 * this version does not know). Version 00 and anything malformed pass as they are, so the
 * parser still refuses them.
 */
export function readableTraceparent(value: string | string[] | undefined): string | undefined {
  // Repeated traceparent headers are invalid (OpenTelemetry would take the first one).
  const single = Array.isArray(value) ? (value.length === 1 ? value[0] : undefined) : value;
  if (single === undefined) return undefined;
  const header = single.replace(/^[ \t]+|[ \t]+$/g, '');
  if (header.length <= VERSION_00_LENGTH || header[VERSION_00_LENGTH] !== '-') return header;
  const version = header.slice(0, 2).toLowerCase();
  return version === '00' || version === 'ff' ? header : header.slice(0, VERSION_00_LENGTH);
}

/** One tracestate value from one or several headers (RFC 9110 list), valid and within the W3C limits. */
function validTracestate(value: string | string[] | undefined): string | undefined {
  if (value === undefined) return undefined;
  return readTracestate(Array.isArray(value) ? value.join(',') : value);
}
