import { context, trace } from '@opentelemetry/api';
import { isTracingSuppressed } from '@opentelemetry/core';
import { describe, expect, it } from 'vitest';
import { tracedFetch } from '../../src/telemetry/traced-fetch.js';
import { withSession } from '../../src/session/index.js';
import { installTestTelemetry } from '../../src/testing/test-telemetry.js';
import { CHAT_A } from '../agent/llm/fixtures.js';

installTestTelemetry();

describe('tracedFetch', () => {
  it('keeps the caller headers, adds trace headers, and fetches with tracing suppressed', async () => {
    const calls: { headers: Headers; suppressed: boolean }[] = [];
    const fetch = tracedFetch(async (_input, init) => {
      calls.push({ headers: new Headers(init?.headers), suppressed: isTracingSuppressed(context.active()) });
      return new Response('{}');
    });
    let spanId = '';
    await withSession(CHAT_A, () =>
      trace.getTracer('test').startActiveSpan('chat m', async (span) => {
        spanId = span.spanContext().spanId;
        await fetch('http://127.0.0.1:9/v1/chat/completions', { headers: new Headers({ authorization: 'Bearer k', traceparent: 'stale' }) });
        span.end();
      }),
    );
    const [call] = calls;
    expect(call!.headers.get('authorization')).toBe('Bearer k');
    expect(call!.headers.get('traceparent')).toMatch(new RegExp(`^00-[0-9a-f]{32}-${spanId}-01$`));
    expect(call!.headers.get('baggage')).toContain('chat.id=chat-a');
    // The undici instrumentation skips suppressed requests: no second span, no second traceparent.
    expect(call!.suppressed).toBe(true);
  });
});
