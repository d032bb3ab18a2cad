import { readFileSync } from 'node:fs';
import * as z from 'zod';
import { ConfigError } from '../../errors.js';

/** An MCP server the gateway starts as a child process and talks to over its stdin and stdout. */
export interface StdioMcpServer {
  readonly command: string;
  readonly args?: readonly string[] | undefined;
  /** The child's only variables beside the MCP SDK's few defaults (HOME, PATH, ...): never the gateway's own. Secret. */
  readonly env?: Readonly<Record<string, string>> | undefined;
  readonly cwd?: string | undefined;
}

/** An MCP server reached over Streamable HTTP. */
export interface HttpMcpServer {
  readonly url: string;
  /** Sent on every request (an Authorization header, say). Secret. */
  readonly headers?: Readonly<Record<string, string>> | undefined;
}

export type McpServerConfig = StdioMcpServer | HttpMcpServer;

/** The servers by name: the `mcpServers` object of the widely used config file. */
export type McpServers = Readonly<Record<string, McpServerConfig>>;

export function isStdioServer(server: McpServerConfig): server is StdioMcpServer {
  return 'command' in server;
}

const stringMap = z.record(z.string(), z.string());
// `type` is accepted because other clients' files carry it; it must agree with the entry.
const stdioSchema = z.strictObject({
  type: z.literal('stdio').optional(),
  command: z.string().min(1),
  args: z.array(z.string()).optional(),
  env: stringMap.optional(),
  cwd: z.string().min(1).optional(),
});
const httpSchema = z.strictObject({
  type: z.enum(['http', 'streamable-http', 'streamableHttp']).optional(),
  url: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }),
  headers: stringMap.optional(),
});
const fileSchema = z.strictObject({ mcpServers: z.record(z.string(), z.unknown()) });

/**
 * Checks servers given in the `mcpServers` shape; `source` names where they came from in the
 * TL_CONFIG_INVALID it throws. Messages name keys, never values: env and header values are secrets.
 */
export function parseMcpServers(servers: unknown, source: string): McpServers {
  if (typeof servers !== 'object' || servers === null || Array.isArray(servers)) {
    throw new ConfigError(source, 'mcpServers must be an object of servers by name');
  }
  const parsed: Record<string, McpServerConfig> = {};
  for (const [name, entry] of Object.entries(servers)) {
    if (name.trim() === '') throw new ConfigError(source, 'an MCP server needs a name');
    const label = `MCP server ${JSON.stringify(name.slice(0, 64))}`;
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) throw new ConfigError(source, `${label} must be an object`);
    if ('command' in entry && 'url' in entry) throw new ConfigError(source, `${label} has both "command" and "url": give one`);
    const schema = 'command' in entry ? stdioSchema : 'url' in entry ? httpSchema : undefined;
    if (schema === undefined) throw new ConfigError(source, `${label} needs "command" (stdio) or "url" (Streamable HTTP)`);
    const result = schema.safeParse(entry);
    if (!result.success) throw new ConfigError(source, `${label}: ${problem(result.error)}`);
    const { type: _, ...server } = result.data;
    parsed[name] = server;
  }
  return parsed;
}

/** The servers of a `{"mcpServers": {...}}` file, read once at start. */
export function readMcpServersFile(path: string, variable: string): McpServers {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new ConfigError(variable, `cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? 'unreadable'})`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    // V8's message quotes the text around the fault, which may be a secret: only its position is told.
    const position = /position (\d+)/.exec((error as Error).message)?.[1];
    throw new ConfigError(variable, `${path} is not JSON${position === undefined ? '' : ` (at position ${position})`}`);
  }
  const file = fileSchema.safeParse(json);
  if (!file.success) throw new ConfigError(variable, `${path}: ${problem(file.error)}`);
  return parseMcpServers(file.data.mcpServers, variable);
}

/** The first issue, by key path; zod's messages do not repeat the value. */
function problem(error: z.ZodError): string {
  const [first] = error.issues;
  if (first === undefined) return 'not a valid entry';
  const path = first.path.map(String).join('.');
  return path === '' ? first.message : `${path}: ${first.message}`;
}
