import { trace } from '@opentelemetry/api';
import { pino, type DestinationStream, type Logger } from 'pino';
import { activeContext, getSession, names, routingFields } from '../session/index.js';

export interface LoggerOptions {
  readonly level?: string;
  /** Log chat and user names as they are; by default they are redacted. */
  readonly includeNames?: boolean;
  readonly destination?: DestinationStream;
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
 * chat. Names in logged objects are redacted unless `includeNames`.
 */
export function createLogger(options: LoggerOptions = {}): Logger {
  const includeNames = options.includeNames ?? false;
  return pino(
    {
      level: options.level ?? 'info',
      mixin: () => contextFields(includeNames),
      ...(includeNames ? {} : { redact: { paths: REDACTED_PATHS, censor: '[redacted]' } }),
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
