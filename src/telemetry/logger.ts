import { trace } from '@opentelemetry/api';
import { pino, type DestinationStream, type Logger } from 'pino';
import { activeContext, getSession, names, routingFields } from '../session/index.js';
import { privacySerializers } from './log-privacy.js';
import { SECRET_PATHS, secretSerializers } from './log-secrets.js';
import { checkAttributeOptions, type SessionAttributeOptions } from './session-attributes.js';
import { namesNeedPlainPrivacy, readSpanAttributeOptions } from './telemetry-config.js';

export interface LoggerOptions {
  readonly level?: string;
  /** Log chat and user names as they are; by default they are redacted. */
  readonly includeNames?: boolean;
  readonly destination?: DestinationStream;
  /**
   * Ids in records as spans show them (pseudonyms in `hmac`, none in `off`). Default: the
   * span privacy setting in the environment (THREADLINE_SPAN_PRIVACY, THREADLINE_SPAN_HMAC_KEY).
   */
  readonly privacy?: SessionAttributeOptions;
}

// Dotted keys need bracket notation: pino reads a bare "chat.name" as no path at all.
const REDACTED_PATHS = [
  'chatName',
  'userName',
  '*.chatName',
  '*.userName',
  `["${names.CHAT_NAME}"]`,
  `["${names.USER_NAME}"]`,
  `*["${names.CHAT_NAME}"]`,
  `*["${names.USER_NAME}"]`,
];

/**
 * A pino logger whose every record carries trace_id, span_id and the routing of the active
 * session, read at the moment of logging, so a log line can be found from its trace and its
 * chat. Ids follow the span privacy setting; names in logged objects are redacted unless
 * `includeNames`; secrets (credential fields, URL userinfo, queries and bot tokens, in
 * messages and errors too) always are.
 */
export function createLogger(options: LoggerOptions = {}): Logger {
  const includeNames = options.includeNames ?? false;
  const privacy = checkAttributeOptions(options.privacy ?? readSpanAttributeOptions(process.env));
  if (includeNames && privacy.privacy !== 'plain') throw namesNeedPlainPrivacy(privacy.privacy);
  return pino(
    {
      level: options.level ?? 'info',
      mixin: () => contextFields(includeNames),
      serializers: { ...secretSerializers, ...privacySerializers(privacy) },
      redact: { paths: includeNames ? SECRET_PATHS : [...SECRET_PATHS, ...REDACTED_PATHS], censor: '[redacted]' },
    },
    options.destination,
  );
}

function contextFields(includeNames: boolean): Record<string, string> {
  const ctx = activeContext();
  const fields: Record<string, string> = {};
  const span = trace.getSpanContext(ctx);
  if (span !== undefined) {
    fields['trace_id'] = span.traceId;
    fields['span_id'] = span.spanId;
    fields['trace_flags'] = span.traceFlags.toString(16).padStart(2, '0');
  }
  const session = getSession(ctx);
  if (session === undefined) return fields;
  Object.assign(fields, routingFields(session));
  if (includeNames) {
    if (session.chatName !== undefined) fields[names.CHAT_NAME] = session.chatName;
    if (session.userName !== undefined) fields[names.USER_NAME] = session.userName;
  }
  return fields;
}
