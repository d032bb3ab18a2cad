/** What a model API accepts as a function name. */
const NOT_ALLOWED = /[^A-Za-z0-9_-]/g;
const MAX_LENGTH = 64;

/**
 * The name the model calls an MCP tool by: `<server>__<tool>`, each character outside
 * `[A-Za-z0-9_-]` made `_`, cut to 64. Two tools may end up with one name: the caller keeps the first.
 */
export function mcpToolName(server: string, tool: string): string {
  return `${server}__${tool}`.replace(NOT_ALLOWED, '_').slice(0, MAX_LENGTH);
}
