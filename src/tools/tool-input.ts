import type { StandardJSONSchemaV1, StandardSchemaV1 } from '@standard-schema/spec';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { ThreadlineError } from '../errors.js';

/** A JSON Schema, as a plain object (a TypeBox schema is one). */
export type JsonSchema = object;

/** What a tool's input may be declared with: a Standard Schema (zod 4, valibot, arktype) or a JSON Schema. */
export type ToolInputSchema = StandardSchemaV1 | JsonSchema;

/** A tool's input, checked: the JSON Schema the model is shown, and the check run before every call. */
export interface ToolInput<Input> {
  readonly jsonSchema: JsonSchema;
  /** The value the tool runs with; TL_TOOL_INPUT naming the first problem when `args` does not fit. */
  check(args: unknown, toolName: string): Promise<Input>;
}

export function isStandardSchema(schema: ToolInputSchema): schema is StandardSchemaV1 {
  const standard = (schema as { '~standard'?: { validate?: unknown } })['~standard'];
  return typeof standard === 'object' && standard !== null && typeof standard.validate === 'function';
}

/**
 * A tool input from a Standard Schema: its own validate() checks (and may transform) the
 * arguments; the model's JSON Schema comes from `parameters` when given, else from the schema's
 * Standard JSON Schema converter (zod 4 has one). TL_CONFIG_INVALID when neither can give it.
 */
export function standardInput<S extends StandardSchemaV1>(schema: S, name: string, parameters?: JsonSchema): ToolInput<StandardSchemaV1.InferOutput<S>> {
  const jsonSchema = parameters ?? convertToJsonSchema(schema, name);
  requireObjectSchema(jsonSchema, name);
  return {
    jsonSchema,
    async check(args, toolName) {
      const result = await schema['~standard'].validate(args);
      if (result.issues === undefined) return result.value as StandardSchemaV1.InferOutput<S>;
      const [first] = result.issues;
      const path = (first?.path ?? []).map((segment) => String(typeof segment === 'object' ? segment.key : segment)).join('.');
      throw inputError(toolName, first?.message ?? 'arguments do not match its schema', path);
    },
  };
}

// strict: false, so annotations other libraries add (TypeBox's, a model vendor's) are let through.
const AJV_OPTIONS = { strict: false };
/**
 * One Ajv a draft, made at first use: a new instance compiles its meta-schema again before the
 * tool's schema, ten times the cost of the schema itself (about 13 ms a tool against 1.5 ms).
 */
let ajv07: Ajv | undefined;
let ajv2020: Ajv2020 | undefined;

/** A tool input from a JSON Schema (draft-07, or 2020-12 when its `$schema` says so), checked with Ajv. */
export function jsonSchemaInput(schema: JsonSchema, name: string): ToolInput<Record<string, unknown>> {
  requireObjectSchema(schema, name);
  const keywords = schema as Readonly<Record<string, unknown>>;
  let validate: ValidateFunction;
  const ajv = String(keywords['$schema'] ?? '').includes('2020-12') ? (ajv2020 ??= new Ajv2020(AJV_OPTIONS)) : (ajv07 ??= new Ajv(AJV_OPTIONS));
  try {
    validate = ajv.compile(schema);
  } catch (error) {
    forget(ajv, schema);
    throw new ThreadlineError('TL_CONFIG_INVALID', `Tool ${name}: its input is not a JSON Schema Ajv can compile (${(error as Error).message})`, { cause: error });
  }
  forget(ajv, schema);
  return {
    jsonSchema: schema,
    async check(args, toolName) {
      if (validate(args)) return args as Record<string, unknown>;
      const first: ErrorObject | undefined = validate.errors?.[0];
      throw inputError(toolName, first?.message ?? 'arguments do not match its schema', (first?.instancePath ?? '').slice(1).replaceAll('/', '.'));
    },
  };
}

/**
 * The compiled check stands alone: the shared instance forgets the schema, so another tool may
 * use the same `$id` and a gateway started again does not add to its cache.
 */
function forget(ajv: Ajv | Ajv2020, schema: JsonSchema): void {
  try {
    ajv.removeSchema(schema);
  } catch {
    // An `$id` Ajv refused (not a string) was never registered.
  }
}

function convertToJsonSchema(schema: StandardSchemaV1, name: string): JsonSchema {
  const converter = (schema['~standard'] as Partial<StandardJSONSchemaV1.Props>).jsonSchema;
  if (converter === undefined) {
    throw new ThreadlineError(
      'TL_CONFIG_INVALID',
      `Tool ${name}: its ${schema['~standard'].vendor} schema cannot give a JSON Schema for the model; pass \`parameters\` with one`,
    );
  }
  // draft-07: what model APIs document; the `$schema` key says nothing the model needs.
  const { $schema: _, ...jsonSchema } = converter.input({ target: 'draft-07' });
  return jsonSchema;
}

/** A model's function parameters are an object of named arguments. */
function requireObjectSchema(schema: JsonSchema, name: string): void {
  const type = (schema as Readonly<Record<string, unknown>>)['type'];
  if (type !== 'object') {
    throw new ThreadlineError('TL_CONFIG_INVALID', `Tool ${name}: its input must be an object schema (type "object"), not ${JSON.stringify(type ?? null)}`);
  }
}

function inputError(toolName: string, problem: string, path: string): ThreadlineError {
  return new ThreadlineError('TL_TOOL_INPUT', `${toolName}: ${problem}${path === '' ? '' : ` at ${path}`}`);
}
