import { formatDestination } from '../../session/delivery.js';
import { parseTarget, type Target } from '../../session/target.js';
import { ThreadlineError } from '../../errors.js';

/**
 * Checks a job's target when it is created: `origin`, `home`, `home:<platform>` or
 * `platform:chat[:thread]`, naming a platform enabled in this gateway. Returns it as stored
 * (an explicit destination in formatDestination's one spelling). Throws TL_TARGET_INVALID.
 */
export function checkTarget(text: string, platforms: ReadonlySet<string>): string {
  const target = parseTarget(text);
  const platform = platformOf(target);
  if (platform !== undefined && !platforms.has(platform)) {
    throw new ThreadlineError(
      'TL_TARGET_INVALID',
      `No platform "${platform.slice(0, 40)}" is enabled in this gateway (enabled: ${[...platforms].join(', ') || 'none'})`,
    );
  }
  return target.to === 'explicit' ? formatDestination(target.destination) : text;
}

/** The platform a target names, when it names one. */
function platformOf(target: Target): string | undefined {
  if (target.to === 'explicit') return target.destination.platform;
  if (target.to === 'home') return target.platform;
  return undefined;
}
