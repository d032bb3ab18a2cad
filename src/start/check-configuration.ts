/**
 * The whole configuration checked at once: each setting on its own (kind, range, choices),
 * then both readers for the checks across settings. `threadline config` and `threadline
 * doctor` report every problem, where start-up stops at the first.
 */
import { ConfigError } from '../errors.js';
import { readGatewayConfig } from '../gateway/gateway-config.js';
import { readTelemetryConfig } from '../telemetry/telemetry-config.js';
import { readChoice, readFlag, readInteger, readRedisUrl, readText, readUrl } from '../config/read-setting.js';
import { SETTINGS, SETTING_NAMES, type SettingName } from '../config/settings.js';

/** Every ConfigError the environment gives, one per variable, in table order. */
export function checkConfiguration(env: NodeJS.ProcessEnv): ConfigError[] {
  const errors = new Map<string, ConfigError>();
  const check = (read: () => unknown) => {
    const error = configErrorOf(read);
    if (error !== undefined && !errors.has(error.variable)) errors.set(error.variable, error);
  };
  for (const name of SETTING_NAMES) check(() => readSetting(env, name));
  // Each refused setting at its default, so the readers go on to the checks across settings.
  const rest = Object.fromEntries(Object.entries(env).filter(([name]) => !errors.has(name)));
  check(() => readGatewayConfig(rest));
  check(() => readTelemetryConfig(rest));
  const order = (variable: string) => {
    const index = SETTING_NAMES.indexOf(variable as SettingName);
    return index < 0 ? SETTING_NAMES.length : index;
  };
  return [...errors.values()].sort((a, b) => order(a.variable) - order(b.variable));
}

/** The setting as its reader sees it, default applied. */
export function readSetting(env: NodeJS.ProcessEnv, name: SettingName): string | number | boolean | undefined {
  const setting = SETTINGS[name];
  switch (setting.kind) {
    case 'integer':
      return readInteger(env, name as Parameters<typeof readInteger>[1]);
    case 'flag':
      return readFlag(env, name as Parameters<typeof readFlag>[1]);
    case 'choice':
      return readChoice(env, name as Parameters<typeof readChoice>[1]);
    case 'url':
      return readUrl(env, name as Parameters<typeof readUrl>[1]);
    case 'redis-url':
      return readRedisUrl(env, name as Parameters<typeof readRedisUrl>[1]);
    case 'text':
      return readText(env, name as Parameters<typeof readText>[1]);
  }
}

/** The ConfigError `read` throws, if any; anything else it throws is a bug and goes on. */
function configErrorOf(read: () => unknown): ConfigError | undefined {
  try {
    read();
    return undefined;
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
}
