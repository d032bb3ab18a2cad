import { formatDestination, parseDestination, type Destination } from './delivery.js';

/**
 * Where a delivery goes: the chat and thread the work came from, the platform's home
 * channel (/sethome), or an explicit destination.
 */
export type Target =
  | { readonly to: 'origin' }
  | { readonly to: 'home'; readonly platform?: string }
  | { readonly to: 'explicit'; readonly destination: Destination };

/**
 * Parses `origin`, `home`, `home:<platform>` or a destination as formatDestination spells it,
 * `<platform>:<chat>[:<thread>]` with ids percent-encoded (':' in an id is %3A).
 */
export function parseTarget(text: string): Target {
  if (text === 'origin') return { to: 'origin' };
  if (text === 'home') return { to: 'home' };
  const parts = text.split(':');
  if (parts[0] === 'home' && parts.length === 2 && parts[1] !== '') return { to: 'home', platform: parts[1]! };
  return { to: 'explicit', destination: parseDestination(text) };
}

/** The inverse of parseTarget: the one spelling a target is stored and shown in. */
export function formatTarget(target: Target): string {
  if (target.to === 'explicit') return formatDestination(target.destination);
  return target.to === 'home' && target.platform !== undefined ? `home:${target.platform}` : target.to;
}
