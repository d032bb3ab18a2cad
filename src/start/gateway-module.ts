import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Agent } from '../agent/agent.js';
import { readText } from '../config/read-setting.js';
import { ThreadlineError, messageOf } from '../errors.js';
import type { McpServerConfig } from '../tools/mcp/mcp-servers-config.js';
import type { Tool } from '../tools/tool.js';
import type { Toolbox } from '../tools/toolbox.js';

/** What a gateway module (THREADLINE_CONFIG, `threadline.config.js`) gives the gateway it starts. */
export interface GatewayModule {
  /** Your own tools (defineTool), offered beside the built-in ones. */
  readonly tools?: readonly Tool[];
  /** Your agent; a function is given the toolbox (every tool, yours included). Default: the gateway's own. */
  readonly agent?: Agent | ((toolbox: Toolbox) => Agent);
  /** MCP servers by name, as in a THREADLINE_MCP_SERVERS file's `mcpServers`. */
  readonly mcpServers?: Readonly<Record<string, McpServerConfig>>;
}

/** Types a gateway module's default export; returns it as it is. */
export function defineGatewayConfig(module: GatewayModule): GatewayModule {
  return module;
}

/** Looked for in the working directory when THREADLINE_CONFIG is not set. */
export const DEFAULT_GATEWAY_MODULES = ['threadline.config.js', 'threadline.config.mjs'] as const;

const KEYS: ReadonlySet<string> = new Set(['tools', 'agent', 'mcpServers']);

/**
 * The gateway module THREADLINE_CONFIG names, else the first default one in `cwd`, else
 * nothing. TL_CONFIG_INVALID when a named one is missing, fails to load, or exports what a
 * gateway cannot use: a start with half a configuration is worse than none.
 */
export async function loadGatewayModule(env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): Promise<GatewayModule & { readonly path?: string }> {
  const named = readText(env, 'THREADLINE_CONFIG');
  const path = named !== undefined ? resolve(cwd, named) : DEFAULT_GATEWAY_MODULES.map((name) => resolve(cwd, name)).find((candidate) => existsSync(candidate));
  if (path === undefined) return {};
  if (!existsSync(path)) throw new ThreadlineError('TL_CONFIG_INVALID', `THREADLINE_CONFIG: no module at ${path}`);
  let loaded: { default?: unknown };
  try {
    loaded = (await import(pathToFileURL(path).href)) as { default?: unknown };
  } catch (error) {
    throw new ThreadlineError('TL_CONFIG_INVALID', `The gateway module ${path} failed to load: ${messageOf(error)}`, { cause: error });
  }
  return { ...checked(loaded.default, path), path };
}

function checked(value: unknown, path: string): GatewayModule {
  const problem = (what: string) => new ThreadlineError('TL_CONFIG_INVALID', `The gateway module ${path}: ${what}`);
  if (typeof value !== 'object' || value === null) throw problem('its default export must be an object: `export default defineGatewayConfig({ tools, agent, mcpServers })`');
  const unknown = Object.keys(value).filter((key) => !KEYS.has(key));
  if (unknown.length > 0) throw problem(`unknown keys ${unknown.join(', ')} (it takes tools, agent and mcpServers)`);
  const { tools, agent, mcpServers } = value as Record<string, unknown>;
  if (tools !== undefined && !(Array.isArray(tools) && tools.every(isTool))) throw problem('`tools` must be an array of tools made with defineTool');
  if (agent !== undefined && typeof agent !== 'function' && typeof (agent as { handle?: unknown }).handle !== 'function') {
    throw problem('`agent` must have a handle(turn) method, or be a function of the toolbox returning one');
  }
  if (mcpServers !== undefined && (typeof mcpServers !== 'object' || mcpServers === null)) throw problem('`mcpServers` must be an object of servers by name');
  return value as GatewayModule;
}

function isTool(value: unknown): value is Tool {
  const tool = value as Partial<Tool> | null;
  return typeof tool === 'object' && tool !== null && typeof tool.name === 'string' && typeof tool.run === 'function' && typeof tool.input?.check === 'function';
}
