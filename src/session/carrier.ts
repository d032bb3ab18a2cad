import { ROOT_CONTEXT, propagation, type Context } from '@opentelemetry/api';
import { ThreadlineError } from '../errors.js';
import { INBOUND_KEEP_BAGGAGE_KEY } from './context-keys.js';
import { contextWithSession, getSession } from './run-with-session.js';
import type { SessionInput } from './session.js';
import { activeContext } from './active-context.js';

/**
 * A headers-like carrier for crossing a thread or process boundary that threadline owns
 * (worker_threads, queue messages): plain string fields, safe to postMessage or JSON-encode.
 */
export type Carrier = Record<string, string>;

/** The carrier field holding the session, base64url JSON so it is header-safe. */
export const SESSION_CARRIER_FIELD = 'threadline-session';

/**
 * Writes the context's trace parent and baggage (through the global propagators) and its
 * session into `carrier`. Only for destinations threadline trusts: the session field is read
 * back as routing by extractSession.
 */
export function injectSession(carrier: Carrier = {}, ctx: Context = activeContext()): Carrier {
  propagation.inject(ctx, carrier);
  const session = getSession(ctx);
  if (session !== undefined) {
    carrier[SESSION_CARRIER_FIELD] = Buffer.from(JSON.stringify(session)).toString('base64url');
  }
  return carrier;
}

/**
 * Rebuilds, from the root, the context a carrier was made in: remote parent span, baggage
 * and session. Throws TL_SNAPSHOT_INVALID or TL_SESSION_INVALID for a damaged session field.
 */
export function extractSession(carrier: Readonly<Carrier>): Context {
  // A trusted carrier keeps its foreign baggage; threadline's own keys come from the session field.
  const extracted = propagation
    .extract(ROOT_CONTEXT.setValue(INBOUND_KEEP_BAGGAGE_KEY, true), carrier)
    .deleteValue(INBOUND_KEEP_BAGGAGE_KEY);
  const encoded = carrier[SESSION_CARRIER_FIELD];
  if (encoded === undefined) return extracted;
  let session: unknown;
  try {
    session = JSON.parse(Buffer.from(encoded, 'base64url').toString('utf8'));
  } catch (cause) {
    throw new ThreadlineError('TL_SNAPSHOT_INVALID', `Carrier field ${SESSION_CARRIER_FIELD} is not base64url JSON`, { cause });
  }
  return contextWithSession(extracted, session as SessionInput);
}
