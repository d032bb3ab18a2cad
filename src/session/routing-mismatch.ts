import type { Attributes } from '@opentelemetry/api';
import type { Session } from './index.js';
import type { Destination } from './delivery.js';

/**
 * Compares where a delivery is going with the routing captured where its work began.
 * Returns the event attributes when they differ, undefined when they agree. A difference
 * means some work ran under the wrong context: another message's, or none.
 */
export function routingMismatch(origin: Session, destination: Destination): Attributes | undefined {
  if (
    origin.platform === destination.platform &&
    origin.chatId === destination.chatId &&
    origin.threadId === destination.threadId
  ) {
    return undefined;
  }
  return {
    'routing.origin.platform': origin.platform,
    'routing.origin.chat.id': origin.chatId,
    'routing.origin.chat.thread.id': origin.threadId ?? '',
    'routing.destination.platform': destination.platform,
    'routing.destination.chat.id': destination.chatId,
    'routing.destination.chat.thread.id': destination.threadId ?? '',
  };
}

/** The destination of a session: its chat and thread on its platform. */
export function destinationOf(session: Session): Destination {
  return {
    platform: session.platform,
    chatId: session.chatId,
    ...(session.threadId === undefined ? {} : { threadId: session.threadId }),
  };
}
