import type { StandardSchemaV1 } from '@standard-schema/spec';
import { ThreadlineError } from '../errors.js';
import type { Tool, ToolCall, ToolResult } from './tool.js';
import { isStandardSchema, jsonSchemaInput, standardInput, type JsonSchema, type ToolInputSchema } from './tool-input.js';

/** What a model API accepts as a function name. */
const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/** A tool as its author writes it; see defineTool. */
export interface ToolDefinition<Schema extends ToolInputSchema, Input> {
  /** The function name the model calls: letters, digits, `_` and `-`, at most 64. */
  readonly name: string;
  /** What the model is told the tool does, and when to call it. */
  readonly description: string;
  /** Its arguments: a Standard Schema (zod 4, valibot, arktype) or a JSON Schema, of an object. */
  readonly input: Schema;
  /** The JSON Schema the model is shown, for a Standard Schema that cannot convert itself. */
  readonly parameters?: JsonSchema | undefined;
  /** Offered to, and callable by, senders in THREADLINE_ADMINS only. Default false. */
  readonly adminOnly?: boolean | undefined;
  /** False: offered to no model (a tool switched off by configuration). Default true. */
  readonly enabled?: boolean | undefined;
  /** Offered in turns of these platforms only. Default: every platform. */
  readonly platforms?: readonly string[] | undefined;
  /**
   * True when what it answers holds nothing written by others (Tool.trustedOutput). Default
   * false: a model that read its answer needs an admin's /confirm for admin-only calls after it.
   */
  readonly trustedOutput?: boolean | undefined;
  /**
   * Record what a call returns under its key, so a turn replayed after a crash is answered with
   * it instead of running the call again (Tool.recordsResult). Default false: a tool makes its
   * effects once by ids of its own, or has none.
   */
  readonly recordsResult?: boolean | undefined;
  /**
   * Runs a call with its checked input, inside the turn's session: read chat and thread with
   * getSession() or requireSession(). What it returns (a string, or text with a file) is what
   * the model is told; a ThreadlineError thrown is told to the model as `error: <message>`.
   */
  run(input: Input, call: ToolCall): Promise<ToolResult | string> | ToolResult | string;
}

/**
 * Makes a tool from its definition: the input's JSON Schema derived once, its check compiled
 * once. TL_CONFIG_INVALID for a name a model cannot call, or an input that is no object schema.
 */
export function defineTool<Schema extends StandardSchemaV1>(
  definition: ToolDefinition<Schema, StandardSchemaV1.InferOutput<Schema>>,
): Tool<StandardSchemaV1.InferOutput<Schema>>;
export function defineTool(definition: ToolDefinition<JsonSchema, Record<string, unknown>>): Tool;
export function defineTool(definition: ToolDefinition<ToolInputSchema, unknown>): Tool<unknown> {
  const { name, description, input: schema, parameters, adminOnly = false, enabled = true, platforms, trustedOutput = false, recordsResult = false, run } = definition;
  if (typeof name !== 'string' || !TOOL_NAME.test(name)) {
    throw new ThreadlineError('TL_CONFIG_INVALID', `A tool name is 1 to 64 letters, digits, _ or -: ${JSON.stringify(String(name).slice(0, 80))} is not`);
  }
  if (typeof description !== 'string' || description.trim() === '') {
    throw new ThreadlineError('TL_CONFIG_INVALID', `Tool ${name}: a description says the model what it does`);
  }
  const input = isStandardSchema(schema) ? standardInput(schema, name, parameters) : jsonSchemaInput(schema, name);
  return {
    name,
    description,
    input,
    adminOnly,
    enabled,
    platforms: platforms === undefined ? undefined : [...platforms],
    trustedOutput,
    recordsResult,
    async run(checked, call) {
      const result = await run(checked, call);
      return typeof result === 'string' ? { text: result } : result;
    },
  };
}
