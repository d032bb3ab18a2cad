import { SETTINGS } from '../../config/settings.js';
import { commaList } from '../../env-vars.js';
import { childProcessEnv } from '../../session/index.js';
import { redactText } from '../../text/redact-secrets.js';

/** What a shell needs to behave as at a terminal: passed as they are. */
const SYSTEM_VARIABLES: ReadonlySet<string> = new Set(['PATH', 'HOME', 'USER', 'LOGNAME', 'SHELL', 'LANG', 'LANGUAGE', 'TZ', 'TERM', 'TMPDIR', 'PWD']);

/** Settings a command may see, their URLs without credentials; secrets and who the admins are stay in the gateway. */
const WITHHELD_SETTINGS: ReadonlySet<string> = new Set([
  ...Object.entries(SETTINGS)
    .filter(([, setting]) => (setting as { secret?: boolean }).secret === true)
    .map(([name]) => name),
  'THREADLINE_ADMINS',
]);

/** OpenTelemetry variables that carry credentials (an exporter's headers, a client key). */
const OTEL_SECRET = /HEADERS|CLIENT_KEY|PASSWORD|TOKEN/;

/**
 * The environment of a command the terminal tool runs, allow-listed: the shell's own variables
 * (PATH, HOME, LANG, LC_*…), the gateway's settings that are no secrets (any URL in them without
 * its credentials or query), OTEL_* but headers and keys, the names the operator lists in
 * THREADLINE_TERMINAL_ENV, and the active session's own variables (childProcessEnv). Anything
 * else in the gateway's environment (a token, a cloud key) a command could print into the chat.
 */
export function commandEnv(base: NodeJS.ProcessEnv = process.env, passed: readonly string[] = commaList(base['THREADLINE_TERMINAL_ENV'])): NodeJS.ProcessEnv {
  const extra = new Set(passed);
  const allowed: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(base)) {
    if (value === undefined) continue;
    if (SYSTEM_VARIABLES.has(name) || name.startsWith('LC_') || extra.has(name)) allowed[name] = value;
    else if (name.startsWith('THREADLINE_') && name in SETTINGS && !WITHHELD_SETTINGS.has(name)) allowed[name] = redactText(value);
    else if (name.startsWith('OTEL_') && !OTEL_SECRET.test(name)) allowed[name] = redactText(value);
  }
  return childProcessEnv(allowed);
}
