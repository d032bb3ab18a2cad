import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { loadGatewayModule } from '../../src/start/gateway-module.js';
import { assertThreadlineError, rejectionOf } from '../helpers/errors.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function project(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'threadline-module-'));
  dirs.push(dir);
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

const DEFINE_TOOL = pathToFileURL(join(import.meta.dirname, '../../src/tools/define-tool.ts')).href;
const TOOL_MODULE = `import { defineTool } from '${DEFINE_TOOL}';
export default { tools: [defineTool({ name: 'hello', description: 'Says hello', input: { type: 'object' }, run: () => 'hello' })], agent: { handle: async () => {} } };
`;

describe('loadGatewayModule', () => {
  it('loads threadline.config.js from the working directory when THREADLINE_CONFIG is unset', async () => {
    const dir = project({ 'threadline.config.js': TOOL_MODULE, 'package.json': '{"type":"module"}' });
    const module = await loadGatewayModule({}, dir);
    expect(module.path).toBe(join(dir, 'threadline.config.js'));
    expect(module.tools!.map((tool) => tool.name)).toEqual(['hello']);
    expect(typeof (module.agent as { handle: unknown }).handle).toBe('function');
  });

  it('loads the module THREADLINE_CONFIG names, relative to the working directory', async () => {
    const dir = project({ 'gateway.mjs': TOOL_MODULE });
    expect((await loadGatewayModule({ THREADLINE_CONFIG: 'gateway.mjs' }, dir)).tools).toHaveLength(1);
  });

  it('is empty without a module', async () => {
    expect(await loadGatewayModule({}, project({}))).toEqual({});
  });

  it.each([
    ['a named module that does not exist', {}, 'missing.mjs', /no module at/],
    ['a module that throws', { 'm.mjs': "throw new Error('boom');" }, 'm.mjs', /failed to load: boom/],
    ['no default export', { 'm.mjs': 'export const tools = [];' }, 'm.mjs', /default export must be an object/],
    ['an unknown key', { 'm.mjs': 'export default { tool: [] };' }, 'm.mjs', /unknown keys tool/],
    ['tools not made with defineTool', { 'm.mjs': 'export default { tools: [{ name: "x" }] };' }, 'm.mjs', /defineTool/],
    ['an agent without handle()', { 'm.mjs': 'export default { agent: {} };' }, 'm.mjs', /handle\(turn\)/],
  ])('refuses %s with TL_CONFIG_INVALID', async (_, files, name, message) => {
    const dir = project(files as Record<string, string>);
    const error = assertThreadlineError(await rejectionOf(loadGatewayModule({ THREADLINE_CONFIG: name }, dir)), 'TL_CONFIG_INVALID');
    expect(error.message).toMatch(message);
  });
});
