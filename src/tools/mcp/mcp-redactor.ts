import { redactText } from '../../text/redact-secrets.js';
import { isStdioServer, type McpServerConfig } from './mcp-servers-config.js';

/** Shorter configured values are too likely to be ordinary words to cut out of a text. */
const MIN_SECRET_CHARS = 8;

/**
 * Redacts what threadline knows to be secret plus the server's own configured header and env
 * values, which a server may echo in an error, a result or its stderr: whatever shape they have.
 */
export function mcpRedactor(config: McpServerConfig): (text: string) => string {
  const values = Object.values((isStdioServer(config) ? config.env : config.headers) ?? {})
    .filter((value) => value.length >= MIN_SECRET_CHARS)
    // Longest first: a value holding another is cut whole.
    .sort((a, b) => b.length - a.length);
  return (text) => {
    let safe = text;
    for (const value of values) safe = safe.replaceAll(value, '<redacted>');
    return redactText(safe);
  };
}
