import { LogLevel, type Logger as SlackLogger } from '@slack/web-api';
import type { Logger } from 'pino';

/** pino's level as @slack/web-api's, never below info: its debug lines are dropped. */
function slackLevel(level: string): LogLevel {
  if (level === 'trace' || level === 'debug' || level === 'info') return LogLevel.INFO;
  return level === 'warn' ? LogLevel.WARN : LogLevel.ERROR;
}

/**
 * @slack/web-api's logger as records of the gateway's: its default writes plain text to the
 * console (lines that break a JSON log) with a failed request's message as it is, URL
 * credentials included. Each call is one record marked as the client's, its scalars joined into
 * the message, which the logger's serializers redact (src/telemetry/log-secrets.ts); objects
 * are left out. Its debug lines are dropped: they hold every request's body and answer, a
 * chat's text and its plain channel id, which span privacy (hmac, off) keeps out of logs. Its
 * level is otherwise the gateway's: setLevel and setName change nothing.
 */
export function slackClientLogger(logger: Logger): SlackLogger {
  const at =
    (level: 'error' | 'warn' | 'info') =>
    (...parts: unknown[]): void => {
      if (!logger.isLevelEnabled(level)) return;
      const text = parts.filter((part) => ['string', 'number', 'boolean'].includes(typeof part)).map(String);
      logger[level]({ component: 'slack-web-api' }, text.join(' '));
    };
  return {
    debug: () => undefined,
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    setLevel: () => undefined,
    getLevel: () => slackLevel(logger.level),
    setName: () => undefined,
  };
}
