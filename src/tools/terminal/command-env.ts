import { isSecretVariable, isUrlSetting } from '../../config/secret-variables.js';
import { SETTINGS } from '../../config/settings.js';
import { childProcessEnv } from '../../session/index.js';

/** What a shell needs to behave as at a terminal: passed as they are. */
const SYSTEM_VARIABLES: ReadonlySet<string> = new Set(['PATH', 'HOME', 'USER', 'LOGNAME', 'SHELL', 'LANG', 'LANGUAGE', 'TZ', 'TERM', 'TMPDIR', 'PWD']);

/** Who the admins are stays in the gateway, with the secrets and every URL setting. */
const ADMINS = 'THREADLINE_ADMINS';

/** A setting a command may see as it is. */
function passedSetting(name: string): boolean {
  return name in SETTINGS && name !== ADMINS && !isSecretVariable(name) && !isUrlSetting(name);
}

/** An OpenTelemetry endpoint goes as its origin alone: a path or query may carry a key. */
function endpointOrigin(value: string): string | undefined {
  try {
    const url = new URL(value);
    return url.origin === 'null' ? undefined : url.origin;
  } catch {
    return undefined;
  }
}

/**
 * The environment of a command the terminal tool runs, allow-listed: the shell's own variables
 * (PATH, HOME, LANG, LC_*…), the gateway's settings that are neither secrets, URLs nor the
 * admins, OTEL_* but credentials (an endpoint as its origin alone), the names the operator lists in
 * THREADLINE_TERMINAL_ENV, then the settings the running gateway gives its commands (`gateway`,
 * ToolServices.commandSettings), and the active session's own variables (childProcessEnv).
 * Anything else in the gateway's environment (a token, a cloud key) a command could print into the chat.
 */
export function commandEnv(base: NodeJS.ProcessEnv, passed: readonly string[], gateway: Readonly<Record<string, string>> = {}): NodeJS.ProcessEnv {
  const extra = new Set(passed);
  const allowed: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(base)) {
    if (value === undefined) continue;
    if (SYSTEM_VARIABLES.has(name) || name.startsWith('LC_') || extra.has(name)) allowed[name] = value;
    else if (name.startsWith('THREADLINE_') && passedSetting(name)) allowed[name] = value;
    else if (name.startsWith('OTEL_') && !isSecretVariable(name)) {
      const passed = name.includes('ENDPOINT') ? endpointOrigin(value) : value;
      if (passed !== undefined) allowed[name] = passed;
    }
  }
  return childProcessEnv({ ...allowed, ...gateway });
}
