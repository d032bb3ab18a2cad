import { ThreadlineError } from '../errors.js';
import { getSession, type RoutingSnapshot, type Session } from '../session/index.js';
import { formatDestination, parseDestination, type Destination } from '../session/delivery.js';
import { destinationOf } from '../session/routing-mismatch.js';
import { validateDestination } from '../session/validate-session.js';
import type { Target } from '../session/target.js';
import type { HomeChannels } from '../store/store.js';

/**
 * The one owner of what a target means. The origin session is the active context's, or,
 * where no session is active (the CLI, a delivery replayed outside its work), the session
 * of the work's routing snapshot. Then, for each kind of target:
 *
 * - `origin`: the origin session's chat and thread, where a reply goes;
 * - `home`: the home channel (/sethome) of the origin session's platform;
 * - `home:<platform>`: the home channel of that platform;
 * - `platform:chat[:thread]`: that chat and thread, in formatDestination's one spelling.
 *
 * A home channel is read when the delivery is made (an unset one is TL_HOME_UNSET), and the
 * destination's platform must be enabled in this gateway (else TL_TARGET_INVALID). `origin`
 * and `home` without a session are TL_SESSION_MISSING.
 */
export class TargetResolver {
  constructor(
    private readonly homes: Pick<HomeChannels, 'get'>,
    private readonly platforms: ReadonlySet<string>,
  ) {}

  /** Where a delivery made now to `target` goes, for work whose routing is `snapshot`. */
  async resolve(target: Target, snapshot?: RoutingSnapshot): Promise<Destination> {
    const destination =
      target.to === 'explicit'
        ? explicitDestination(target.destination)
        : target.to === 'home'
          ? await this.home(target.platform ?? originSession(target, snapshot).platform)
          : destinationOf(originSession(target, snapshot));
    this.requireEnabled(destination.platform);
    return destination;
  }

  /**
   * Checks a target kept for deliveries made later (a cron job, a reminder) by every rule
   * but the home channel's, which each delivery reads then, so a /sethome before the first
   * run counts. Returns the target with an explicit destination in its one spelling.
   */
  check(target: Target, snapshot?: RoutingSnapshot): Target {
    if (target.to === 'explicit') {
      const destination = explicitDestination(target.destination);
      this.requireEnabled(destination.platform);
      return { to: 'explicit', destination };
    }
    this.requireEnabled(target.to === 'home' && target.platform !== undefined ? target.platform : originSession(target, snapshot).platform);
    return target;
  }

  private async home(platform: string): Promise<Destination> {
    // An unknown platform has no home: say that, not that the home is unset.
    this.requireEnabled(platform);
    const home = await this.homes.get(platform);
    if (home === undefined) {
      throw new ThreadlineError('TL_HOME_UNSET', `${platform} has no home channel; send /sethome in the chat that should be it`);
    }
    return home;
  }

  private requireEnabled(platform: string): void {
    if (this.platforms.has(platform)) return;
    throw new ThreadlineError(
      'TL_TARGET_INVALID',
      `No platform "${platform.slice(0, 40)}" is enabled in this gateway (enabled: ${[...this.platforms].join(', ') || 'none'})`,
    );
  }
}

/** The session `origin` and `home` are read from: the active context's, else the snapshot's. */
function originSession(target: Target, snapshot: RoutingSnapshot | undefined): Session {
  const session = getSession() ?? (snapshot?.session as Session | undefined);
  if (session === undefined) {
    throw new ThreadlineError('TL_SESSION_MISSING', `The target ${target.to} names the chat of a session, and no session is active here`);
  }
  return session;
}

/**
 * Checked as an inbound message's ids are (validateDestination), then spelled and read back:
 * an id the store could not read back (an empty thread) is refused here too.
 */
function explicitDestination(destination: Destination): Destination {
  return parseDestination(formatDestination(validateDestination(destination)));
}
