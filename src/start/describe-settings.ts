/**
 * Each setting as `threadline config` shows it: the value in force, where it came from, and
 * the default. Secrets show as `(set)` (a Redis URL with its password masked), lists of
 * people as how many entries they hold, and URLs keep origin and path only, so the output
 * can be pasted into an issue.
 */
import { commaList } from '../env-vars.js';
import { ConfigError } from '../errors.js';
import { safeUrl } from '../text/redact-secrets.js';
import { checkConfiguration, readSetting } from './check-configuration.js';
import { isSet } from '../config/read-setting.js';
import { redactRedisUrl } from '../config/redis-url.js';
import { SETTINGS, SETTING_NAMES, type Setting, type SettingGroup, type SettingName } from '../config/settings.js';

export interface SettingState {
  readonly name: SettingName;
  readonly group: SettingGroup;
  /** What is in force, as shown: undefined when unset with no default, `(set)` for a secret. */
  readonly value: string | undefined;
  readonly source: 'environment' | 'default';
  /** The default, in words where it depends on other settings. */
  readonly default: string;
  readonly secret: boolean;
  /** Names people: the value is shown as `(N entries)`. */
  readonly personal: boolean;
  /** Why the value is refused, when it is. */
  readonly error?: string;
}

interface ConfigurationState {
  readonly settings: readonly SettingState[];
  /** Every problem, in table order; empty when the gateway would start. */
  readonly errors: readonly ConfigError[];
}

const SECRET_SET = '(set)';

export function describeConfiguration(env: NodeJS.ProcessEnv): ConfigurationState {
  const errors = checkConfiguration(env);
  const errorOf = new Map(errors.map((error) => [error.variable, error.message]));
  const settings = SETTING_NAMES.map((name): SettingState => {
    const setting: Setting = SETTINGS[name];
    const error = errorOf.get(name);
    const source = isSet(env, name) ? 'environment' : 'default';
    return {
      name,
      group: setting.group,
      value: shownValue(env, name, setting, source, error !== undefined),
      source,
      default: defaultText(setting),
      secret: setting.secret === true,
      personal: setting.personal === true,
      ...(error === undefined ? {} : { error }),
    };
  });
  return { settings, errors };
}

/** The default as words: `defaultText` without its Markdown, else the value, else `unset`. */
export function defaultText(setting: Setting): string {
  if (setting.defaultText !== undefined) return setting.defaultText.replaceAll('`', '');
  return setting.default === undefined ? 'unset' : String(setting.default);
}

function shownValue(env: NodeJS.ProcessEnv, name: SettingName, setting: Setting, source: string, refused: boolean): string | undefined {
  // Where Redis is helps whoever reads the output; its password stays masked, and a refused value is not shown.
  if (setting.kind === 'redis-url' && source === 'environment') return refused ? '(invalid)' : redactRedisUrl(env[name]!.trim());
  if (setting.secret) return source === 'environment' ? SECRET_SET : undefined;
  // Refused or not: a malformed entry is still somebody's id.
  if (setting.personal) return entryCount(env[name]);
  if (refused) {
    // A refused URL is not shown: it did not parse, so nothing can be cut out of it.
    return setting.kind === 'url' ? '(invalid)' : env[name]?.trim();
  }
  let value: ReturnType<typeof readSetting>;
  try {
    value = readSetting(env, name);
  } catch (error) {
    // A default computed from another setting that is refused: that one reports it.
    if (error instanceof ConfigError) return undefined;
    throw error;
  }
  if (value === undefined) return undefined;
  return setting.kind === 'url' ? safeUrl(String(value)) : String(value);
}

/** How many comma-separated entries, not which; `*` (everyone) names nobody and shows as itself. */
function entryCount(value: string | undefined): string | undefined {
  const entries = commaList(value);
  if (entries.length === 0) return undefined;
  if (entries.length === 1 && entries[0] === '*') return '*';
  return `(${entries.length} ${entries.length === 1 ? 'entry' : 'entries'})`;
}
