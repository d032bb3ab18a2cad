import { LogLevel, type Logger as SlackLogger } from '@slack/web-api';
import type { Logger } from 'pino';

/** pino's level as @slack/web-api's: what it asks before building a debug line. */
function slackLevel(level: string): LogLevel {
  if (level === 'trace' || level === 'debug') return LogLevel.DEBUG;
  if (level === 'info') return LogLevel.INFO;
  return level === 'warn' ? LogLevel.WARN : LogLevel.ERROR;
}

/**
 * @slack/web-api's logger as records of the gateway's: its default writes plain text to the
 * console (lines that break a JSON log) with a failed request's message as it is, URL
 * credentials included. Each call is one record marked as the client's, its scalars joined into
 * the message, which the logger's serializers redact (src/telemetry/log-secrets.ts); objects
 * are left out. Its level is the gateway's: setLevel and setName change nothing.
 */
export function slackClientLogger(logger: Logger): SlackLogger {
  const at =
    (level: 'error' | 'warn' | 'info' | 'debug') =>
    (...parts: unknown[]): void => {
      if (!logger.isLevelEnabled(level)) return;
      const text = parts.filter((part) => ['string', 'number', 'boolean'].includes(typeof part)).map(String);
      logger[level]({ component: 'slack-web-api' }, text.join(' '));
    };
  return {
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    setLevel: () => undefined,
    getLevel: () => slackLevel(logger.level),
    setName: () => undefined,
  };
}
