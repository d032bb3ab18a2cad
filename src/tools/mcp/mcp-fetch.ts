import { context } from '@opentelemetry/api';
import { suppressTracing } from '@opentelemetry/core';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { outboundHeaders } from '../../session/index.js';

/**
 * The fetch of a Streamable HTTP transport: adds `traceparent`, `tracestate` and the baggage
 * the host's policy allows, from the context active when the SDK sends (it sends inside
 * callTool, so the `tools/call` span, in the turn's session). That span is the request's client
 * span, so the fetch runs with tracing suppressed: no second HTTP span, no second header.
 */
export function mcpFetch(base: FetchLike = globalThis.fetch): FetchLike {
  return (url, init) => {
    const headers = new Headers(init?.headers);
    for (const [name, value] of Object.entries(outboundHeaders(url))) headers.set(name, value);
    return context.with(suppressTracing(context.active()), () => base(url, { ...init, headers }));
  };
}
