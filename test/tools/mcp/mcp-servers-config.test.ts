import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/errors.js';
import { readToolsConfig } from '../../../src/tools/tools-config.js';
import { parseMcpServers } from '../../../src/tools/mcp/mcp-servers-config.js';

/** The temp dirs of the config files written, removed once the file's tests are done. */
const configDirs: string[] = [];
afterAll(() => {
  for (const dir of configDirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const VARIABLE = 'THREADLINE_MCP_SERVERS';

function file(text: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'threadline-mcp-config-'));
  configDirs.push(dir);
  const path = join(dir, 'mcp.json');
  writeFileSync(path, text);
  return path;
}

/** The ConfigError reading a THREADLINE_MCP_SERVERS file of `text` gives. */
function refusal(text: string): ConfigError {
  try {
    readToolsConfig({ [VARIABLE]: file(text) }, '/tmp');
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).variable).toBe(VARIABLE);
    return error as ConfigError;
  }
  throw new Error('expected a ConfigError');
}

describe('THREADLINE_MCP_SERVERS', () => {
  it('reads stdio and HTTP servers from the widely used mcpServers file; unset is none', () => {
    const path = file(
      JSON.stringify({
        mcpServers: {
          files: { command: 'npx', args: ['-y', 'some-mcp-server'], env: { TOKEN: 't' }, cwd: '/srv' },
          search: { type: 'http', url: 'https://mcp.example.com/mcp', headers: { authorization: 'Bearer x' } },
        },
      }),
    );
    expect(readToolsConfig({ [VARIABLE]: path }, '/tmp').mcp).toEqual({
      servers: {
        files: { command: 'npx', args: ['-y', 'some-mcp-server'], env: { TOKEN: 't' }, cwd: '/srv' },
        search: { url: 'https://mcp.example.com/mcp', headers: { authorization: 'Bearer x' } },
      },
      timeoutMs: 60_000,
    });
    expect(readToolsConfig({}, '/tmp').mcp.servers).toEqual({});
  });

  it('refuses a missing file, text that is not JSON, and a file without mcpServers', () => {
    expect(() => readToolsConfig({ [VARIABLE]: join(tmpdir(), 'no-such-dir', 'mcp.json') }, '/tmp')).toThrow(/cannot read .*mcp\.json \(ENOENT\)/);
    const notJson = refusal('{"mcpServers": {"a": {"command": "x", "env": {"KEY": sk-secret-value}}}}');
    expect(notJson.message).toMatch(/is not JSON/);
    expect(notJson.message).not.toContain('sk-secret');
    expect(refusal('{"servers": {}}').message).toMatch(/mcp\.json: mcpServers: Invalid input/);
  });

  it('refuses unknown keys, an entry with neither command nor url, and a URL that is not http(s), naming the server', () => {
    expect(refusal('{"mcpServers": {"a": {"command": "x", "arg": ["y"]}}}').message).toMatch(/MCP server "a": Unrecognized key: "arg"/);
    expect(refusal('{"mcpServers": {"b": {"args": ["y"]}}}').message).toMatch(/MCP server "b" needs "command" \(stdio\) or "url" \(Streamable HTTP\)/);
    expect(refusal('{"mcpServers": {"c": {"url": "ftp://example.com/mcp"}}}').message).toMatch(/MCP server "c": url: must be an http\(s\) URL/);
    expect(refusal('{"mcpServers": {"d": {"command": ""}}}').message).toMatch(/MCP server "d": command/);
    expect(refusal('{"mcpServers": {"e": {"type": "sse", "url": "http://127.0.0.1:1/sse"}}}').message).toMatch(/MCP server "e": type/);
  });

  it('never repeats a header or env value in its message', () => {
    const badHeader = refusal('{"mcpServers": {"h": {"url": "http://127.0.0.1:1/mcp", "headers": {"authorization": 42, "x-key": "hunter2-secret"}}}}');
    expect(badHeader.message).toMatch(/MCP server "h": headers\.authorization/);
    expect(badHeader.message).not.toMatch(/hunter2|42/);
    const badEnv = refusal('{"mcpServers": {"s": {"command": "x", "env": {"API_KEY": ["sk-live-secret"]}}}}');
    expect(badEnv.message).toMatch(/MCP server "s": env\.API_KEY/);
    expect(badEnv.message).not.toContain('sk-live-secret');
  });

  it('checks servers given in code the same way, under the name of where they came from', () => {
    expect(() => parseMcpServers({ x: { url: 'http://127.0.0.1:1/mcp', command: 'y' } }, 'GatewayParts.mcpServers')).toThrow(/Invalid GatewayParts\.mcpServers: MCP server "x" has both "command" and "url"/);
    expect(() => parseMcpServers([], 'GatewayParts.mcpServers')).toThrow(/must be an object of servers by name/);
  });
});
