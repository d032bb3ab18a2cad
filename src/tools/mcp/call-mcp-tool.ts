import { SpanKind, context, propagation, type Attributes } from '@opentelemetry/api';
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, McpError, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import {
  ATTR_GEN_AI_OPERATION_NAME,
  ATTR_GEN_AI_TOOL_NAME,
  ATTR_MCP_METHOD_NAME,
  ATTR_MCP_PROTOCOL_VERSION,
  ATTR_MCP_SESSION_ID,
  ATTR_NETWORK_TRANSPORT,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
  GEN_AI_OPERATION_NAME_VALUE_EXECUTE_TOOL,
  MCP_METHOD_NAME_VALUE_TOOLS_CALL,
} from '@opentelemetry/semantic-conventions/incubating';
import { ThreadlineError, messageOf } from '../../errors.js';
import { outboundHeaders, recordFailure } from '../../session/index.js';
import { threadlineTracer } from '../../telemetry/tracer.js';
import { redactText } from '../../text/redact-secrets.js';
import type { ToolCall } from '../tool.js';
import type { McpConnection } from './mcp-connection.js';

const tracer = threadlineTracer();
/** What of a server's error text the model and the span are told. */
const ERROR_TEXT_CHARS = 1_000;

/**
 * Calls `tool` on the server inside a CLIENT span `tools/call <tool>` (OTel MCP semantic
 * conventions), with the span's trace context and the allowed baggage in `params._meta`
 * (and, over HTTP, in the request's headers too: see tracedFetch). Resolves with the result's
 * text. Throws TL_TOOL_FAILED for a result with `isError` or a refused call, and
 * TL_TOOL_UNAVAILABLE when the server cannot be reached.
 */
export function callMcpTool(connection: McpConnection, tool: string, args: Record<string, unknown>, call: ToolCall, timeoutMs: number): Promise<string> {
  return tracer.startActiveSpan(`${MCP_METHOD_NAME_VALUE_TOOLS_CALL} ${tool}`, { kind: SpanKind.CLIENT, attributes: spanAttributes(connection, tool) }, async (span) => {
    try {
      const result = (await connection.client.callTool({ name: tool, arguments: args, _meta: traceMeta(connection) }, undefined, {
        signal: call.signal,
        timeout: timeoutMs,
      })) as CallToolResult;
      if (result.isError === true) {
        throw new ThreadlineError('TL_TOOL_FAILED', `${tool} on MCP server "${connection.server}" failed: ${bounded(connection.redact(textOf(result))) || 'no detail given'}`);
      }
      return connection.redact(textOf(result));
    } catch (error) {
      const failure = toolError(error, connection, tool, timeoutMs, call.signal);
      recordFailure(span, failure);
      span.setAttribute('error.type', failure.code);
      throw failure;
    } finally {
      span.end();
    }
  });
}

function spanAttributes(connection: McpConnection, tool: string): Attributes {
  const protocolVersion = connection.protocolVersion();
  const sessionId = connection.sessionId();
  return {
    [ATTR_MCP_METHOD_NAME]: MCP_METHOD_NAME_VALUE_TOOLS_CALL,
    [ATTR_GEN_AI_TOOL_NAME]: tool,
    [ATTR_GEN_AI_OPERATION_NAME]: GEN_AI_OPERATION_NAME_VALUE_EXECUTE_TOOL,
    [ATTR_NETWORK_TRANSPORT]: connection.networkTransport,
    ...(protocolVersion === undefined ? {} : { [ATTR_MCP_PROTOCOL_VERSION]: protocolVersion }),
    ...(sessionId === undefined ? {} : { [ATTR_MCP_SESSION_ID]: sessionId }),
    ...(connection.http === undefined ? {} : { [ATTR_SERVER_ADDRESS]: connection.http.address, [ATTR_SERVER_PORT]: connection.http.port }),
  };
}

/**
 * `traceparent`, `tracestate` and `baggage` for `params._meta`, from the active context (the
 * `tools/call` span): an HTTP server gets its host's baggage policy, a stdio server, which has
 * no host, the default keys.
 */
function traceMeta(connection: McpConnection): Record<string, string> {
  if (connection.http !== undefined) return outboundHeaders(connection.http.url);
  const meta: Record<string, string> = {};
  propagation.inject(context.active(), meta);
  return meta;
}

/** The text parts of a result, one per line; other parts named by their type. */
function textOf(result: CallToolResult): string {
  const parts = (result.content ?? []).map((part) => {
    if (part.type === 'text') return part.text;
    if (part.type === 'resource' && 'text' in part.resource) return part.resource.text;
    return `[${part.type}]`;
  });
  if (parts.length === 0 && result.structuredContent !== undefined) return JSON.stringify(result.structuredContent);
  return parts.join('\n');
}

function bounded(text: string): string {
  const safe = redactText(text.trim());
  return safe.length <= ERROR_TEXT_CHARS ? safe : `${safe.slice(0, ERROR_TEXT_CHARS)}…`;
}

/** What the model is told: the server down, the call stopped or timed out, or refused. */
function toolError(error: unknown, connection: McpConnection, tool: string, timeoutMs: number, signal: AbortSignal): ThreadlineError {
  if (error instanceof ThreadlineError) return error;
  const on = `${tool} on MCP server "${connection.server}"`;
  if (signal.aborted) return new ThreadlineError('TL_TOOL_FAILED', `${on} was stopped`, { cause: error });
  if (error instanceof McpError && error.code === ErrorCode.RequestTimeout) {
    return new ThreadlineError('TL_TOOL_FAILED', `${on} gave no answer within ${timeoutMs} ms (THREADLINE_MCP_TIMEOUT_MS)`, { cause: error });
  }
  if (isUnreachable(error)) {
    return new ThreadlineError('TL_TOOL_UNAVAILABLE', `MCP server "${connection.server}" cannot be reached, so ${tool} cannot run: ${bounded(connection.redact(messageOf(error)))}`, { cause: error });
  }
  return new ThreadlineError('TL_TOOL_FAILED', `${on} failed: ${bounded(connection.redact(messageOf(error)))}`, { cause: error });
}

/** The connection is gone (a stdio server that exited, an HTTP server refusing or failing), not the call refused. */
function isUnreachable(error: unknown): boolean {
  if (error instanceof McpError) return error.code === ErrorCode.ConnectionClosed;
  return error instanceof StreamableHTTPError || error instanceof TypeError || messageOf(error) === 'Not connected';
}
