import { SETTINGS } from '../../config/settings.js';
import { childProcessEnv } from '../../session/index.js';

/** Settings a command the model runs must never see: tokens, signing secrets, the Redis URL and its password. */
const SECRET_SETTINGS: readonly string[] = Object.entries(SETTINGS)
  .filter(([, setting]) => (setting as { secret?: boolean }).secret === true)
  .map(([name]) => name);

/**
 * The environment of a command the terminal tool runs: the active session's own variables
 * (childProcessEnv), without the gateway's secrets, which a command could print into the chat.
 */
export function commandEnv(base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const env = childProcessEnv(base);
  for (const name of SECRET_SETTINGS) delete env[name];
  return env;
}
