import { createContextKey } from '@opentelemetry/api';

/** Holds the active Session. Routing is read from here only, never from baggage. */
export const SESSION_KEY = createContextKey('threadline.session');

/**
 * Holds the host an outbound call goes to, set by outboundHeaders(), so the baggage
 * propagator can apply a per-host policy even though a carrier does not name its host.
 */
export const DESTINATION_HOST_KEY = createContextKey('threadline.destination.host');

/**
 * Holds the foreign-baggage choice of the inboundContext() call that is extracting, so the
 * baggage propagator keeps what that call asked for instead of its own start-up default.
 */
export const INBOUND_KEEP_BAGGAGE_KEY = createContextKey('threadline.inbound.keep-baggage');
