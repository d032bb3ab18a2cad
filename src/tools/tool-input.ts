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
 * One Ajv a draft checks every schema against its meta-schema, compiled once: a new instance
 * would compile it again for each tool, about 13 ms of the 15 a tool took. Each schema is then
 * compiled by an instance of its own, so no `$id` and nothing compiled is shared between tools.
 */
let metaCheck07: Ajv | undefined;
let metaCheck2020: Ajv2020 | undefined;

/** A tool input from a JSON Schema (draft-07, or 2020-12 when its `$schema` says so), checked with Ajv. */
export function jsonSchemaInput(schema: JsonSchema, name: string): ToolInput<Record<string, unknown>> {
  requireObjectSchema(schema, name);
  const keywords = schema as Readonly<Record<string, unknown>>;
  const draft2020 = String(keywords['$schema'] ?? '').includes('2020-12');
  const metaCheck = draft2020 ? (metaCheck2020 ??= new Ajv2020(AJV_OPTIONS)) : (metaCheck07 ??= new Ajv(AJV_OPTIONS));
  const refused = (reason: string, cause?: unknown) =>
    new ThreadlineError('TL_CONFIG_INVALID', `Tool ${name}: its input is not a JSON Schema Ajv can compile (${reason})`, cause === undefined ? undefined : { cause });
  let validate: ValidateFunction;
  try {
    // validateSchema only reads the schema: the shared instance keeps nothing of it. It throws for a `$schema` it does not know.
    if (!metaCheck.validateSchema(schema)) throw refused(`schema is invalid: ${metaCheck.errorsText(metaCheck.errors)}`);
    const options = { ...AJV_OPTIONS, validateSchema: false };
    validate = (draft2020 ? new Ajv2020(options) : new Ajv(options)).compile(schema);
  } catch (error) {
    throw error instanceof ThreadlineError ? error : refused((error as Error).message, error);
  }
  return {
    jsonSchema: schema,
    async check(args, toolName) {
      if (validate(args)) return args as Record<string, unknown>;
      const first: ErrorObject | undefined = validate.errors?.[0];
      throw inputError(toolName, first?.message ?? 'arguments do not match its schema', (first?.instancePath ?? '').slice(1).replaceAll('/', '.'));
    },
  };
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
