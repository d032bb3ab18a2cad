import { readChoice, readFlag, readInteger, readText, readUrl } from '../config/read-setting.js';
import { SETTINGS, SETTING_NAMES, type Setting, type SettingName } from '../config/settings.js';
import { ConfigError } from '../errors.js';

/** The settings the OpenTelemetry SDK and its exporters read themselves (`readBySdk` in the table). */
export const SDK_SETTING_NAMES: readonly SettingName[] = SETTING_NAMES.filter((name) => (SETTINGS[name] as Setting).readBySdk === true);

/**
 * Reads each of them through the table, so a value outside it stops start-up with a
 * ConfigError naming the variable, as any other setting's would; the SDK alone would log a
 * warning and quietly take its default (no TLS, no compression, no headers). Only what the SDK
 * would misread is refused: a choice's case or spaces only where the SDK keeps them.
 */
export function checkSdkSettingValues(env: NodeJS.ProcessEnv): void {
  for (const name of SDK_SETTING_NAMES) {
    const setting: Setting = SETTINGS[name];
    const reader = { integer: readInteger, flag: readFlag, choice: readChoice, url: readUrl, text: readText }[setting.kind as Exclude<Setting['kind'], 'redis-url'>];
    (reader as (env: NodeJS.ProcessEnv, name: SettingName) => unknown)(env, name);
    const raw = env[name];
    if (setting.kind !== 'choice' || raw === undefined || raw.trim() === '') continue;
    if (setting.spaceSensitive && raw !== raw.trim()) {
      throw new ConfigError(name, `"${raw}" must have no spaces around it: the OpenTelemetry SDK does not trim it`);
    }
    if (setting.caseSensitive && raw.trim() !== raw.trim().toLowerCase()) {
      throw new ConfigError(name, `"${raw.trim()}" must be written in lower case: the OpenTelemetry SDK compares it as written`);
    }
  }
}
