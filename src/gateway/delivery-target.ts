import { ThreadlineError } from '../errors.js';
import type { Destination } from '../store/store.js';

/**
 * Where a delivery goes: the chat and thread the work came from, the platform's home
 * channel (/sethome), or an explicit destination.
 */
export type Target =
  | { readonly to: 'origin' }
  | { readonly to: 'home'; readonly platform?: string }
  | { readonly to: 'explicit'; readonly destination: Destination };

/**
 * Parses `origin`, `home`, `home:<platform>` or `<platform>:<chat>[:<thread>]`. Chat and
 * thread ids are percent-encoded, so an id containing ':' is written %3A and never splits.
 */
export function parseTarget(text: string): Target {
  if (text === 'origin') return { to: 'origin' };
  if (text === 'home') return { to: 'home' };
  const parts = text.split(':');
  if (parts[0] === 'home' && parts.length === 2 && parts[1] !== '') return { to: 'home', platform: parts[1]! };
  if (parts.length < 2 || parts.length > 3 || parts.some((part) => part === '')) {
    throw new ThreadlineError(
      'TL_TARGET_INVALID',
      `Target ${JSON.stringify(text.slice(0, 80))} is not origin, home[:platform] or platform:chat[:thread] (percent-encode ':' in ids as %3A)`,
    );
  }
  try {
    const [platform, chatId, threadId] = parts.map(decodeURIComponent) as [string, string, string | undefined];
    return { to: 'explicit', destination: { platform, chatId, ...(threadId === undefined ? {} : { threadId }) } };
  } catch (cause) {
    throw new ThreadlineError('TL_TARGET_INVALID', `Target ${JSON.stringify(text.slice(0, 80))} has broken percent-encoding`, { cause });
  }
}

/** The inverse of parseTarget for explicit destinations. */
export function formatDestination(destination: Destination): string {
  const parts = [destination.platform, destination.chatId];
  if (destination.threadId !== undefined) parts.push(destination.threadId);
  return parts.map(encodeURIComponent).join(':');
}
