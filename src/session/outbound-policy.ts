import { propagation, type Baggage, type Context } from '@opentelemetry/api';
import { boundedHeader } from './baggage-entries.js';
import { DESTINATION_HOST_KEY } from './context-keys.js';
import { CHAT_ID, CHAT_PLATFORM, CHAT_THREAD_ID, CHAT_TYPE, SESSION_ID, USER_ID, isSessionNamespaceKey } from './names.js';
import { activeContext } from './active-context.js';

/** The threadline baggage keys that may leave the process at all (names never do). */
export const OUTBOUND_KEYS: readonly string[] = [CHAT_PLATFORM, CHAT_TYPE, CHAT_ID, CHAT_THREAD_ID, USER_ID, SESSION_ID];

/** Which threadline keys go to a host. `host` is exact ("api.example.com") or a suffix ("*.example.com"). */
export interface HostRule {
  readonly host: string;
  readonly keys: readonly string[];
}

/**
 * `keys` go to every host no rule matches; the first matching rule decides for its host.
 * Foreign baggage (not threadline's) passes through, within the W3C limits.
 */
export interface OutboundBaggagePolicy {
  readonly keys: readonly string[];
  readonly hosts: readonly HostRule[];
}

export const DEFAULT_OUTBOUND_POLICY: OutboundBaggagePolicy = {
  keys: [CHAT_PLATFORM, CHAT_ID, CHAT_THREAD_ID, SESSION_ID],
  hosts: [],
};

/** The threadline keys allowed to `host`; an unknown host gets the policy's default keys. */
export function outboundKeysFor(policy: OutboundBaggagePolicy, host: string | undefined): readonly string[] {
  if (host !== undefined) {
    const name = host.toLowerCase();
    for (const rule of policy.hosts) {
      if (rule.host.startsWith('*.') ? name.endsWith(rule.host.slice(1)) : name === rule.host) return rule.keys;
    }
  }
  return policy.keys;
}

/**
 * The `baggage` header value to send to `host`: foreign entries and the allowed threadline
 * keys, bounded; '' when nothing may go.
 */
export function outboundBaggageHeader(baggage: Baggage, policy: OutboundBaggagePolicy, host: string | undefined): string {
  const allowed = outboundKeysFor(policy, host);
  return boundedHeader(baggage, (key) => !isSessionNamespaceKey(key) || allowed.includes(key));
}

/**
 * Injects trace context and baggage for an HTTP call to `url` into `headers`, marking the
 * destination so a SessionBaggagePropagator applies that host's policy.
 */
export function outboundHeaders(
  url: string | URL,
  headers: Record<string, string> = {},
  ctx: Context = activeContext(),
): Record<string, string> {
  const host = (typeof url === 'string' ? new URL(url) : url).hostname;
  propagation.inject(ctx.setValue(DESTINATION_HOST_KEY, host), headers);
  return headers;
}
