/**
 * THREADLINE_REDIS_URL: checked and shown without its password. Here, not beside the Redis
 * client, so `threadline config` can show it without loading ioredis.
 */
import { ConfigError } from '../errors.js';

const REDIS_PROTOCOLS = ['redis:', 'rediss:'];
const DEFAULT_PORT = '6379';

/** The URL as set (trimmed) when it is a redis:// or rediss:// URL; refused without echoing it, since it may hold a password. */
export function parseRedisUrl(name: string, value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ConfigError(name, 'is not an absolute URL: write it as redis://[:password@]host[:port][/db], or rediss:// for TLS');
  }
  if (!REDIS_PROTOCOLS.includes(url.protocol)) {
    throw new ConfigError(name, `must be a redis:// or rediss:// URL, not ${url.protocol}//`);
  }
  return value;
}

/**
 * A Redis URL fit for a log line, an error message or `threadline config`: scheme, user,
 * host, port and database, the password as `***`, no query. A value that does not parse is
 * not echoed at all.
 */
export function redactRedisUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return '(an unparsable Redis URL)';
  }
  const credentials = parsed.password !== '' ? `${parsed.username}:***@` : parsed.username !== '' ? `${parsed.username}@` : '';
  const host = parsed.hostname === '' ? 'localhost' : parsed.hostname;
  const database = parsed.pathname === '/' ? '' : parsed.pathname;
  return `${parsed.protocol}//${credentials}${host}:${parsed.port === '' ? DEFAULT_PORT : parsed.port}${database}`;
}
