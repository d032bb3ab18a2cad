import type { StandardSchemaV1 } from '@standard-schema/spec';
import { Type } from 'typebox';
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { defineTool } from '../../src/tools/define-tool.js';
import { executeTool } from '../../src/tools/execute-tool.js';
import { withSession, getSession } from '../../src/session/index.js';
import { assertThreadlineError, expectThreadlineError, rejectionOf } from '../helpers/errors.js';

const call = { signal: new AbortController().signal, authorize: async () => true };
const session = { platform: 'webhook', chatType: 'group' as const, chatId: 'c-1', threadId: 't-1', userId: 'u-1' };

describe('defineTool', () => {
  it('takes a zod schema: the model sees its JSON Schema, the tool its parsed (defaulted) input, in the session', async () => {
    const tool = defineTool({
      name: 'weather',
      description: 'The weather in a city',
      input: z.object({ city: z.string().min(1).describe('A city'), days: z.number().int().default(1) }),
      run: ({ city, days }) => `${city} for ${days} day(s) in ${getSession()?.chatId}:${getSession()?.threadId}`,
    });
    expect(tool.input.jsonSchema).toMatchObject({ type: 'object', properties: { city: { type: 'string', minLength: 1, description: 'A city' } }, required: ['city'] });
    expect(tool.input.jsonSchema).not.toHaveProperty('$schema');
    const result = await withSession(session, () => executeTool(tool, { city: 'Oslo' }, call));
    expect(result).toEqual({ text: 'Oslo for 1 day(s) in c-1:t-1' });
  });

  it('refuses input that breaks a zod schema with TL_TOOL_INPUT naming the field, before run', async () => {
    let ran = false;
    const tool = defineTool({ name: 'weather', description: 'd', input: z.object({ city: z.string().min(1) }), run: () => ((ran = true), 'x') });
    const error = assertThreadlineError(await rejectionOf(executeTool(tool, { city: '' }, call)), 'TL_TOOL_INPUT');
    expect(error.message).toMatch(/^weather: .* at city$/);
    expect(ran).toBe(false);
  });

  it('takes a JSON Schema (TypeBox or plain) checked with Ajv', async () => {
    const plain = defineTool({
      name: 'add',
      description: 'Adds',
      input: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'], additionalProperties: false },
      run: (input) => String((input['a'] as number) + (input['b'] as number)),
    });
    expect(await executeTool(plain, { a: 1, b: 2 }, call)).toEqual({ text: '3' });
    expect(assertThreadlineError(await rejectionOf(executeTool(plain, { a: 1 }, call)), 'TL_TOOL_INPUT').message).toMatch(/b/);
    const typebox = defineTool({ name: 'echo', description: 'Echoes', input: Type.Object({ text: Type.String({ maxLength: 3 }) }), run: (input) => String(input['text']) });
    expect(assertThreadlineError(await rejectionOf(executeTool(typebox, { text: 'long' }, call)), 'TL_TOOL_INPUT').message).toMatch(/at text$/);
  });

  it('takes a 2020-12 JSON Schema', async () => {
    const tool = defineTool({
      name: 'pick',
      description: 'Picks',
      input: { $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object', properties: { xs: { type: 'array', prefixItems: [{ type: 'string' }] } } },
      run: () => 'ok',
    });
    expect(assertThreadlineError(await rejectionOf(executeTool(tool, { xs: [1] }, call)), 'TL_TOOL_INPUT').message).toMatch(/xs/);
  });

  it('checks each JSON Schema apart: two with one $id, a nested $id that is another\'s own, a recursive one', async () => {
    const first = defineTool({ name: 'first', description: 'd', input: { $id: 'https://example.test/input', type: 'object', required: ['a'] }, run: () => 'first' });
    const second = defineTool({ name: 'second', description: 'd', input: { $id: 'https://example.test/input', type: 'object', required: ['b'] }, run: () => 'second' });
    // One tool's nested $id is another's own.
    defineTool({ name: 'nested', description: 'd', input: { type: 'object', properties: { address: { $id: 'https://example.test/address', type: 'object' } } }, run: () => 'x' });
    defineTool({ name: 'address', description: 'd', input: { $id: 'https://example.test/address', type: 'object' }, run: () => 'x' });
    expect(await executeTool(first, { a: 1 }, call)).toEqual({ text: 'first' });
    expect(await executeTool(second, { b: 1 }, call)).toEqual({ text: 'second' });
    expect(assertThreadlineError(await rejectionOf(executeTool(second, { a: 1 }, call)), 'TL_TOOL_INPUT').message).toMatch(/b/);
    const tree = defineTool({
      name: 'tree',
      description: 'd',
      input: { type: 'object', properties: { name: { type: 'string' }, children: { type: 'array', items: { $ref: '#' } } }, required: ['name'] },
      run: () => 'tree',
    });
    expect(await executeTool(tree, { name: 'a', children: [{ name: 'b', children: [] }] }, call)).toEqual({ text: 'tree' });
    expect(assertThreadlineError(await rejectionOf(executeTool(tree, { name: 'a', children: [{ children: [] }] }, call)), 'TL_TOOL_INPUT').message).toMatch(/name/);
  });

  it('asks for `parameters` when a Standard Schema cannot give a JSON Schema, and uses them when given', async () => {
    const bare: StandardSchemaV1<{ n: number }> = {
      '~standard': {
        version: 1,
        vendor: 'handmade',
        validate: (value) => (typeof (value as { n?: unknown }).n === 'number' ? { value: value as { n: number } } : { issues: [{ message: 'n must be a number', path: ['n'] }] }),
      },
    };
    expect(expectThreadlineError(() => defineTool({ name: 'n', description: 'd', input: bare, run: () => 'x' }), 'TL_CONFIG_INVALID').message).toMatch(/parameters/);
    const tool = defineTool({ name: 'n', description: 'd', input: bare, parameters: { type: 'object', properties: { n: { type: 'number' } } }, run: ({ n }) => String(n * 2) });
    expect(await executeTool(tool, { n: 4 }, call)).toEqual({ text: '8' });
    expect(assertThreadlineError(await rejectionOf(executeTool(tool, { n: 'x' }, call)), 'TL_TOOL_INPUT').message).toBe('n: n must be a number at n');
  });

  it.each([
    ['a name a model cannot call', { name: 'has space', description: 'd', input: z.object({}) }],
    ['an empty description', { name: 'ok', description: ' ', input: z.object({}) }],
    ['an input that is no object', { name: 'ok', description: 'd', input: z.string() }],
    ['a JSON Schema Ajv cannot compile', { name: 'ok', description: 'd', input: { type: 'object', properties: { a: { type: 'nonsense' } } } }],
    ['a JSON Schema whose $id is no string', { name: 'ok', description: 'd', input: { $id: 7, type: 'object' } }],
    ['a JSON Schema of a draft Ajv does not know', { name: 'ok', description: 'd', input: { $schema: 'http://json-schema.org/draft-04/schema#', type: 'object' } }],
  ])('refuses %s with TL_CONFIG_INVALID', (_, definition) => {
    expectThreadlineError(() => defineTool({ ...(definition as Parameters<typeof defineTool>[0]), run: () => 'x' }), 'TL_CONFIG_INVALID');
  });
});
