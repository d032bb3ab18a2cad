import { resolve } from 'node:path';
import type { GatewayConfig } from '../gateway/gateway-config.js';

/**
 * The settings a command the terminal runs gets from the running gateway, so `threadline send`
 * in it records its message where this gateway reads (ToolServices.commandSettings). From the
 * configuration the gateway runs with, not from its environment, which holds no secret once
 * started and may lack what the gateway was given otherwise (a test's, an embedder's).
 *
 * - THREADLINE_SEND_PLATFORMS: the platforms enabled here, which the command cannot tell from
 *   tokens it never sees;
 * - THREADLINE_DATA_DIR: absolute, as a command runs in the data dir, where `./data` is another;
 * - THREADLINE_SEND_STORE: `sqlite` or `redis`, so a send never falls back to a store this
 *   gateway does not read; on Redis also its THREADLINE_REDIS_PREFIX,
 *   and THREADLINE_REDIS_URL when it holds no credentials: a command learns the address, which
 *   any process that can reach that Redis could use as well. With a password it is withheld, as
 *   every secret is, and the command's send fails, saying so.
 */
export function commandSettings(config: GatewayConfig, platforms: readonly string[], store: 'sqlite' | 'redis' | 'given'): Record<string, string> {
  const settings: Record<string, string> = { THREADLINE_SEND_PLATFORMS: platforms.join(','), THREADLINE_DATA_DIR: resolve(config.dataDir) };
  // A store the embedder gave (GatewayParts.store) is no place a command can name: its own settings decide.
  if (store === 'given') return settings;
  settings['THREADLINE_SEND_STORE'] = store;
  const { redis } = config;
  if (store === 'sqlite' || redis === undefined) return settings;
  settings['THREADLINE_REDIS_PREFIX'] = redis.prefix;
  // A command run as another account (THREADLINE_TERMINAL_USER) is kept out of the store, Redis included.
  if (!mayHoldCredentials(redis.url) && config.tools.terminal.runAs === undefined) settings['THREADLINE_REDIS_URL'] = redis.url;
  return settings;
}

/** A user, a password, a query (ioredis reads options, a password among them, from it) or a path but the database number: withheld. */
function mayHoldCredentials(url: string): boolean {
  try {
    const parsed = new URL(url);
    return parsed.username !== '' || parsed.password !== '' || parsed.search !== '' || parsed.hash !== '' || !/^\/?\d*$/.test(parsed.pathname);
  } catch {
    return true;
  }
}
