import { propagation, type Context, type TextMapPropagator } from '@opentelemetry/api';
import { afterAll, beforeAll } from 'vitest';
import { createPropagator, type TelemetryConfig } from '../../src/telemetry/index.js';

type PropagatorConfig = Pick<TelemetryConfig, 'outboundBaggage' | 'inboundBaggage'>;

/**
 * Replaces the global propagator (test/setup.ts installs threadline's defaults) for the
 * calling describe block with `propagator`, or threadline's built from a config, and puts
 * the defaults back after it.
 */
export function useGlobalPropagator(propagatorOrConfig: TextMapPropagator | PropagatorConfig): void {
  beforeAll(() => {
    propagation.disable();
    const propagator = 'inject' in propagatorOrConfig ? propagatorOrConfig : createPropagator(propagatorOrConfig);
    propagation.setGlobalPropagator(propagator);
  });
  afterAll(() => {
    propagation.disable();
    propagation.setGlobalPropagator(createPropagator());
  });
}

/** The baggage of `ctx` as a plain key → value record (empty when there is none). */
export function baggageRecord(ctx: Context): Record<string, string> {
  const entries = propagation.getBaggage(ctx)?.getAllEntries() ?? [];
  return Object.fromEntries(entries.map(([key, entry]) => [key, entry.value]));
}

/** A W3C baggage header value as a key → value record, decoded; also checks it is well formed. */
export function parseBaggageHeader(header: string | undefined): Record<string, string> {
  if (header === undefined || header === '') return {};
  const record: Record<string, string> = {};
  for (const member of header.split(',')) {
    const [pair] = member.split(';');
    const separator = pair!.indexOf('=');
    if (separator <= 0) throw new Error(`malformed baggage member ${JSON.stringify(member)}`);
    record[decodeURIComponent(pair!.slice(0, separator).trim())] = decodeURIComponent(pair!.slice(separator + 1).trim());
  }
  return record;
}

/** The bytes `ctx`'s baggage takes as a W3C header, counted without truncation. */
export function baggageHeaderBytes(ctx: Context): number {
  const entries = propagation.getBaggage(ctx)?.getAllEntries() ?? [];
  const members = entries.map(
    ([key, entry]) =>
      `${encodeURIComponent(key)}=${encodeURIComponent(entry.value)}${entry.metadata === undefined ? '' : `;${entry.metadata.toString()}`}`,
  );
  return Buffer.byteLength(members.join(','));
}
