import { SpanKind, context, trace } from '@opentelemetry/api';
import { ThreadlineError } from '../errors.js';
import { currentSession, getSession, recordFailure, withSession } from '../session/index.js';
import { threadlineTracer } from '../telemetry/tracer.js';
import type { Tool, ToolCall, ToolResult } from './tool.js';
import { markedFromEnvironment } from './tool-surface.js';
import { nextCallKey } from './call-key.js';
import { runRecorded } from './recorded-call.js';

const tracer = threadlineTracer();

/** Decides whether the sender may call an admin-only tool; a refusal is answered by whoever decides. */
export type Authorize = (toolName: string) => Promise<boolean>;

/**
 * Calls `tool` inside an `execute_tool <name>` span (GenAI semantic conventions), a child of
 * the active span, so it carries the session like every span. Arguments are checked against
 * the tool's schema first, and an admin-only tool asks `authorize`. Throws TL_TOOL_INPUT for
 * bad arguments, TL_NOT_ADMIN for a refused sender, or what the tool threw.
 *
 * Outside any session (a script, the CLI) the call runs in the session the THREADLINE_SESSION_*
 * variables name, so a tool reads its routing from the context either way; inside one the
 * environment is never read (pitfall: Stale environment fallback).
 */
export async function executeTool<Input>(tool: Tool<Input>, args: unknown, call: ToolCall & { readonly authorize: Authorize }): Promise<ToolResult> {
  // Async: malformed variables (TL_SESSION_INVALID) reject the call instead of throwing past it.
  const fromEnvironment = getSession() === undefined ? currentSession() : undefined;
  if (fromEnvironment === undefined) return traced(tool, args, call);
  return withSession(fromEnvironment, () => context.with(markedFromEnvironment(), () => traced(tool, args, call)));
}

function traced<Input>(tool: Tool<Input>, args: unknown, call: ToolCall & { readonly authorize: Authorize }): Promise<ToolResult> {
  return tracer.startActiveSpan(
    `execute_tool ${tool.name}`,
    {
      kind: SpanKind.INTERNAL,
      attributes: {
        'gen_ai.operation.name': 'execute_tool',
        'gen_ai.tool.name': tool.name,
        'gen_ai.tool.type': 'function',
        ...(call.callId === undefined ? {} : { 'gen_ai.tool.call.id': call.callId }),
      },
    },
    async (span) => {
      try {
        const checked = await tool.input.check(args, tool.name);
        if (tool.adminOnly && !(await call.authorize(tool.name))) {
          throw new ThreadlineError('TL_NOT_ADMIN', `${tool.name} is for admins (THREADLINE_ADMINS)`);
        }
        const idempotencyKey = call.idempotencyKey ?? nextCallKey();
        return await runRecorded(tool, checked, idempotencyKey === undefined ? call : { ...call, idempotencyKey }, span);
      } catch (error) {
        recordFailure(span, error);
        if (error instanceof ThreadlineError) span.setAttribute('error.type', error.code);
        throw error;
      } finally {
        span.end();
      }
    },
  );
}

/** The span of the tool call running now, for a tool that captures its routing (the link of later work). */
export function activeToolSpan() {
  return trace.getActiveSpan();
}
