// The composition root loads a platform's SDK, the model's client and the MCP client only when
// they are configured: a gateway that uses none of them starts without paying for them.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const ROOT = new URL('../../', import.meta.url).pathname;

/** Every bare specifier resolved while Node runs `args`, in a fresh process. */
async function librariesLoadedBy(args: readonly string[]): Promise<Set<string>> {
  // writeSync: what a loader hook writes to process.stderr may be lost at exit.
  const hook = `import { writeSync } from 'node:fs';
  export async function resolve(specifier, context, next) {
    if (!/^[.\\/]|^node:|^file:|^data:/.test(specifier)) writeSync(2, 'loaded ' + specifier + '\\n');
    return next(specifier, context);
  }`;
  const register = `import { register } from 'node:module'; register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(hook)}`)});`;
  const { stderr } = await run(process.execPath, ['--import', `data:text/javascript,${encodeURIComponent(register)}`, ...args], { cwd: ROOT });
  return new Set([...stderr.matchAll(/^loaded (\S+)$/gm)].map((match) => match[1]!.split('/').slice(0, match[1]!.startsWith('@') ? 2 : 1).join('/')));
}

const ON_DEMAND = ['grammy', '@slack/web-api', '@mattermost/client', 'matrix-js-sdk', '@discordjs/ws', '@discordjs/rest', 'openai', '@modelcontextprotocol/sdk'];

describe('start-up libraries', () => {
  it('loads no platform SDK, model client or MCP client until one is configured', async () => {
    const loaded = await librariesLoadedBy(['--input-type=module', '-e', `await import(${JSON.stringify(`${ROOT}dist/start/start-gateway.js`)})`]);
    // The hook saw the libraries every gateway needs: it would have seen these too.
    expect(loaded).toContain('fastify');
    for (const library of ON_DEMAND) expect(loaded, library).not.toContain(library);
  });

  it('the threadline command loads none of them either', async () => {
    const loaded = await librariesLoadedBy([`${ROOT}dist/cli/threadline.js`, '--version']);
    expect(loaded).toContain('commander');
    for (const library of ON_DEMAND) expect(loaded, library).not.toContain(library);
  });
});
