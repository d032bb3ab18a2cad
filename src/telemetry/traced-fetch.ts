import { context } from '@opentelemetry/api';
import { suppressTracing } from '@opentelemetry/core';
import { outboundHeaders } from '../session/index.js';

/** The fetch signature the openai package and the MCP SDK's Streamable HTTP transport call. */
export type FetchFunction = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

/**
 * A fetch that adds `traceparent` and the baggage the outbound policy allows for the
 * request's host, from the context active when the request is sent: the caller's client span
 * (a model's `chat`, an MCP `tools/call`), inside the turn's session. That span is the request's client span, so the fetch itself runs with
 * tracing suppressed: the undici instrumentation would otherwise add a second span and
 * append a second traceparent and baggage. The openai package hands its headers over as a
 * Headers object in `init.headers`; they are copied, and the trace headers set over any of
 * the same name.
 */
export function tracedFetch(base: FetchFunction = globalThis.fetch): FetchFunction {
  return (input, init) => {
    const url = input instanceof Request ? input.url : input;
    const headers = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined));
    for (const [name, value] of Object.entries(outboundHeaders(url))) headers.set(name, value);
    return context.with(suppressTracing(context.active()), () => base(input, { ...init, headers }));
  };
}
