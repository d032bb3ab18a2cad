import { ConfigError } from './errors.js';

/**
 * Typed parsers for configuration variables, under the settings table (src/config/): read a
 * setting through src/config/read-setting.ts, which takes its default and bounds from the
 * table. Each refuses a value it cannot use with a ConfigError naming the variable, so a
 * typo stops start-up instead of changing behaviour.
 */
export function envString(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const value = env[name]?.trim();
  return value === undefined || value === '' ? undefined : value;
}

export function envOneOf<T extends string>(env: NodeJS.ProcessEnv, name: string, allowed: readonly T[], fallback: T): T {
  const value = envString(env, name)?.toLowerCase();
  if (value === undefined) return fallback;
  if (!allowed.includes(value as T)) throw new ConfigError(name, `"${value}" is not one of ${allowed.join(', ')}`);
  return value as T;
}

export function envFlag(env: NodeJS.ProcessEnv, name: string, fallback = false): boolean {
  const value = envOneOf(env, name, ['1', '0', 'true', 'false'], fallback ? 'true' : 'false');
  return value === '1' || value === 'true';
}

export function envInteger(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const value = envString(env, name);
  if (value === undefined) return fallback;
  const number = Number(value);
  if (!Number.isInteger(number) || number < min || number > max) {
    throw new ConfigError(name, `"${value}" is not a whole number from ${min} to ${max}`);
  }
  return number;
}

/** As envInteger, fractions allowed: milliseconds the SDK takes as any number. */
export function envNumber(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const value = envString(env, name);
  if (value === undefined) return fallback;
  const number = Number(value);
  if (!Number.isFinite(number) || number < min || number > max) {
    throw new ConfigError(name, `"${value}" is not a number from ${min} to ${max}`);
  }
  return number;
}

export function envUrl(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const value = envString(env, name);
  if (value === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    // The value is not echoed: a URL can carry a token.
    throw new ConfigError(name, 'is not an absolute URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ConfigError(name, 'must be an http or https URL');
  return url.toString();
}

/** The entries of a comma-separated value, trimmed, empty ones dropped; none for unset. */
export function commaList(value: string | undefined): string[] {
  return (value ?? '').split(',').map((entry) => entry.trim()).filter((entry) => entry !== '');
}
