import { ROOT_CONTEXT, context, trace } from '@opentelemetry/api';
import { afterAll, describe, expect, it } from 'vitest';
import { contextWithSession, createSession, getSession, names, withSession } from '../../src/session/index.js';
import { createLogger, type LoggerOptions } from '../../src/telemetry/index.js';
import { FULL_SESSION, routingRecord, sessionInput } from '../helpers/sessions.js';
import { createTestTracing } from '../helpers/tracing.js';

const tracing = createTestTracing();
afterAll(() => tracing.provider.shutdown());
const session = createSession(FULL_SESSION);

/** A logger writing into an array, one parsed record per line. */
function capturingLogger(options: Omit<LoggerOptions, 'destination'> = {}) {
  const written: string[] = [];
  const logger = createLogger({ ...options, destination: { write: (line: string) => void written.push(line) } });
  return { logger, written, records: () => written.map((line) => JSON.parse(line) as Record<string, unknown>) };
}

describe('createLogger: context fields', () => {
  it('adds nothing outside a span and a session', () => {
    const { logger, records } = capturingLogger();
    logger.info('plain');
    const [record] = records();
    expect(record).toMatchObject({ msg: 'plain' });
    for (const key of ['trace_id', 'span_id', names.CHAT_ID, names.SESSION_ID]) expect(record).not.toHaveProperty(key);
  });

  it('adds trace_id, span_id and trace_flags inside a span', () => {
    const { logger, records } = capturingLogger();
    const span = tracing.tracer.startSpan('logging');
    context.with(trace.setSpan(ROOT_CONTEXT, span), () => logger.info('in span'));
    span.end();
    expect(records()[0]).toMatchObject({
      trace_id: span.spanContext().traceId,
      span_id: span.spanContext().spanId,
      trace_flags: '01',
    });
  });

  it('adds the routing of the session, read when logging', () => {
    const { logger, records } = capturingLogger();
    withSession(FULL_SESSION, () => logger.info('first'));
    withSession(sessionInput({ chatId: 'second-chat', threadId: undefined, userId: undefined }), () => logger.info('second'));
    const [first, second] = records();
    expect(first).toMatchObject(routingRecord(session));
    expect(second![names.CHAT_ID]).toBe('second-chat');
    expect(second).not.toHaveProperty(names.CHAT_THREAD_ID);
    expect(second).not.toHaveProperty(names.USER_ID);
  });

  it('adds both inside a span within a session', () => {
    const { logger, records } = capturingLogger();
    const ctx = contextWithSession(ROOT_CONTEXT, FULL_SESSION);
    tracing.tracer.startActiveSpan('both', {}, ctx, (span) => {
      logger.info('both');
      span.end();
    });
    expect(records()[0]).toMatchObject({ trace_id: expect.stringMatching(/^[0-9a-f]{32}$/), [names.CHAT_ID]: session.chatId });
  });

  it('honours the level', () => {
    const { logger, written } = capturingLogger({ level: 'warn' });
    logger.info('dropped');
    logger.warn('kept');
    expect(written).toHaveLength(1);
  });
});

describe('createLogger: names', () => {
  const secrets = [FULL_SESSION.chatName!, FULL_SESSION.userName!];

  function logNames(options: Omit<LoggerOptions, 'destination'>) {
    const capture = capturingLogger(options);
    withSession(FULL_SESSION, () => {
      capture.logger.info(
        {
          chatName: FULL_SESSION.chatName,
          userName: FULL_SESSION.userName,
          [names.CHAT_NAME]: FULL_SESSION.chatName,
          [names.USER_NAME]: FULL_SESSION.userName,
          session: getSession(),
          inbound: { [names.CHAT_NAME]: FULL_SESSION.chatName, [names.USER_NAME]: FULL_SESSION.userName },
        },
        'received',
      );
    });
    return capture;
  }

  it('redacts chat and user names everywhere in a record by default', () => {
    const { written, records } = logNames({});
    for (const secret of secrets) expect(written.join('')).not.toContain(secret);
    const [record] = records();
    expect(record).toMatchObject({
      chatName: '[redacted]',
      userName: '[redacted]',
      [names.CHAT_NAME]: '[redacted]',
      [names.USER_NAME]: '[redacted]',
      session: { chatName: '[redacted]', userName: '[redacted]', chatId: session.chatId },
      inbound: { [names.CHAT_NAME]: '[redacted]', [names.USER_NAME]: '[redacted]' },
    });
  });

  it('logs names as they are with includeNames, and adds the session names', () => {
    const { records } = logNames({ includeNames: true });
    const [record] = records();
    expect(record).toMatchObject({
      chatName: FULL_SESSION.chatName,
      userName: FULL_SESSION.userName,
      [names.CHAT_NAME]: FULL_SESSION.chatName,
      [names.USER_NAME]: FULL_SESSION.userName,
      session: { chatName: FULL_SESSION.chatName },
    });
  });

  it('does not add session names from the context by default', () => {
    const { logger, written } = capturingLogger();
    withSession(FULL_SESSION, () => logger.info('no names given'));
    for (const secret of secrets) expect(written.join('')).not.toContain(secret);
  });
});
