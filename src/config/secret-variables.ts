import { SETTINGS } from './settings.js';

/** OpenTelemetry variables that carry credentials (an exporter's headers, a client key, a password). */
const EXPORTER_CREDENTIAL = /^OTEL_\w*(HEADERS|CLIENT_KEY|PASSWORD|TOKEN)\w*$/;

const SETTING_TABLE = SETTINGS as Record<string, { readonly secret?: boolean; readonly kind?: string }>;

/** Whether the variable `name` holds a secret: a setting marked secret, or an OpenTelemetry credential. */
export function isSecretVariable(name: string): boolean {
  return SETTING_TABLE[name]?.secret === true || EXPORTER_CREDENTIAL.test(name);
}

/**
 * Whether `name` is a setting whose value is a URL: a URL can carry a credential anywhere in it
 * (user info, a query, a path segment such as a webhook's key), so it is not passed on.
 */
export function isUrlSetting(name: string): boolean {
  const kind = SETTING_TABLE[name]?.kind;
  return kind === 'url' || kind === 'redis-url';
}
