import { isSender, isUnverified, type Author } from '../../agent/author.js';
import { commaList } from '../../env-vars.js';
import { ConfigError } from '../../errors.js';

const VARIABLE = 'THREADLINE_ADMINS';

/** Who sent a turn's message, as the gateway knows it. */
export interface Sender {
  readonly platform: string;
  readonly userId?: string | undefined;
  /** The platform vouches for the user id (a signature, a secret, a bearer token), so it can name an admin. */
  readonly authenticated: boolean;
}

/** Why a sender is no admin. */
export type AdminRefusal = 'no-admins' | 'not-listed' | 'no-user' | 'unauthenticated';

/**
 * THREADLINE_ADMINS: who may run admin commands. `*` is everyone; otherwise a comma-separated
 * list of `platform:user_id`, the id percent-encoded as session keys write it (':' is %3A);
 * unset is nobody.
 */
export class Admins {
  static readonly NOBODY = new Admins(false, new Set());

  private constructor(
    private readonly everyone: boolean,
    /** `platform:user_id` with the id percent-encoded: one spelling per sender. */
    private readonly entries: ReadonlySet<string>,
  ) {}

  /** Parses the variable's value; a malformed entry is a ConfigError naming the variable. */
  static parse(value: string | undefined): Admins {
    const items = commaList(value);
    if (items.length === 0) return Admins.NOBODY;
    if (items.includes('*')) {
      if (items.length > 1) throw new ConfigError(VARIABLE, '"*" (everyone) stands alone, without other entries');
      return new Admins(true, new Set());
    }
    return new Admins(false, new Set(items.map(entryOf)));
  }

  /**
   * Whether a recorded author (src/agent/author.ts) holds admin rights now. A `~` marker (text
   * sent in from elsewhere, of unknown author) names no admin; with `*`, every sender does.
   */
  holds(author: Author): boolean {
    if (this.everyone) return isSender(author) || isUnverified(author) || author.startsWith('~anonymous:');
    return this.entries.has(author);
  }

  /** `*`: every sender, proven or not, is an admin. */
  get isEveryone(): boolean {
    return this.everyone;
  }

  /** Why `sender` may not run admin commands, or undefined when it may. */
  refusal(sender: Sender): AdminRefusal | undefined {
    if (this.everyone) return undefined;
    if (sender.userId === undefined) return 'no-user';
    // An id anyone could have typed names nobody: an unauthenticated webhook caller, say.
    if (!sender.authenticated) return 'unauthenticated';
    if (this.entries.size === 0) return 'no-admins';
    return this.entries.has(adminEntry(sender.platform, sender.userId)) ? undefined : 'not-listed';
  }
}

/** The THREADLINE_ADMINS entry naming this user. */
export function adminEntry(platform: string, userId: string): string {
  return `${platform}:${encodeURIComponent(userId)}`;
}

/** What a refused sender is told: why, and what would change it. */
export function refusalText(command: string, sender: Sender, reason: AdminRefusal): string {
  switch (reason) {
    case 'no-user':
      return `${command} is for admins, and this message names no user (an anonymous group admin or a channel posts as nobody: post as yourself).`;
    case 'unauthenticated':
      return `${command} is for admins, and this ${sender.platform} message was not authenticated, so its user id counts for nobody.`;
    case 'no-admins':
    case 'not-listed':
      return `${command} is for admins; ask an admin to add ${adminEntry(sender.platform, sender.userId ?? '')} to ${VARIABLE}.`;
  }
}

/**
 * A Matrix user id as Matrix spells it (`matrix:@ann:example.org`, a port after the server
 * allowed): its ':'s cannot be confused, since the id starts with '@' and a localpart has none.
 */
const MATRIX_ENTRY = /^matrix:(@[^:\s%]+):([^\s%]+)$/;

/** `platform:user_id` in its one spelling; refuses what is not one. */
function entryOf(item: string): string {
  const matrix = MATRIX_ENTRY.exec(item);
  if (matrix !== null) return adminEntry('matrix', `${matrix[1]}:${matrix[2]}`);
  const match = /^([a-z][a-z0-9_-]*):([^:\s]+)$/.exec(item);
  if (match === null) {
    throw new ConfigError(VARIABLE, `"${item}" is not platform:user_id (write ':' in an id as %3A; a Matrix id as matrix:@user:server), nor "*"`);
  }
  let userId: string;
  try {
    userId = decodeURIComponent(match[2]!);
  } catch {
    throw new ConfigError(VARIABLE, `"${item}" has broken percent-encoding`);
  }
  return adminEntry(match[1]!, userId);
}
