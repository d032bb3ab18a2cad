export type { ChatType, Session, SessionInput, SessionField } from './session.js';
export { CHAT_TYPES, SESSION_FIELDS } from './session.js';
export * as names from './names.js';
export { isSessionNamespaceKey } from './names.js';
export { routingFields } from './routing-fields.js';
export { createSession, withSessionId, MAX_FIELD_LENGTH } from './validate-session.js';
export { sessionKey, parseSessionKey, deriveSessionId, sessionIdOfKey, type SessionKeyParts } from './session-key.js';
export { SESSION_KEY, DESTINATION_HOST_KEY, INBOUND_KEEP_BAGGAGE_KEY } from './context-keys.js';
export { MAX_BAGGAGE_BYTES, MAX_BAGGAGE_MEMBERS, filterInboundBaggage, type KeepBaggage } from './baggage-entries.js';
export { withoutBaggageOws } from './baggage-ows.js';
export {
  contextWithSession,
  withSession,
  getSession,
  requireSession,
  runDetached,
  bindToSession,
} from './run-with-session.js';
export { sessionEnv, childProcessEnv, SESSION_ENV, type SessionEnvName } from './session-env.js';
export { currentSession } from './current-session.js';
export { captureRouting, resumeRouting, runResumed, type RoutingSnapshot, type ResumedRouting } from './snapshot.js';
export { injectSession, extractSession, SESSION_CARRIER_FIELD, type Carrier } from './carrier.js';
export {
  inboundContext,
  withBaggageEntries,
  parseKeepBaggage,
  type InboundOptions,
  type InboundTrace,
  type InboundHeaders,
  type TraceparentPolicy,
} from './inbound.js';
export {
  DEFAULT_OUTBOUND_POLICY,
  OUTBOUND_KEYS,
  outboundBaggageHeader,
  outboundHeaders,
  outboundKeysFor,
  type HostRule,
  type OutboundBaggagePolicy,
} from './outbound-policy.js';
export { assertContextPropagation } from './assert-context-propagation.js';
export { recordFailure } from './record-failure.js';
export { activeContext, setActiveContextReader } from './active-context.js';
