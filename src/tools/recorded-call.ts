import type { Span } from '@opentelemetry/api';
import { turnCallResults } from './call-key.js';
import type { Tool, ToolCall, ToolResult } from './tool.js';

/**
 * Runs a call of a tool that records its result (Tool.recordsResult) once per call key: a turn
 * run again after a crash finds the result its first run recorded and is answered with it
 * (span attribute `tool.replayed`), the command not run again. The result is recorded before
 * the turn goes on; a call cut short (/stop, shutdown) records nothing, so a replay runs it
 * again. Other tools, and calls outside a turn, simply run.
 */
export async function runRecorded<Input>(tool: Tool<Input>, input: Input, call: ToolCall, span: Span): Promise<ToolResult> {
  const turn = tool.recordsResult === true ? turnCallResults() : undefined;
  const key = call.idempotencyKey;
  if (turn === undefined || key === undefined) return tool.run(input, call);
  const recorded = await turn.results.get(turn.messageId, key);
  if (recorded !== undefined) {
    span.setAttribute('tool.replayed', true);
    return JSON.parse(recorded) as ToolResult;
  }
  const result = await tool.run(input, call);
  if (!call.signal.aborted) await turn.results.record(turn.messageId, key, JSON.stringify(result));
  return result;
}
