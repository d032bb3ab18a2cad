import { CLI_SURFACE, toolSurface } from '../tool-surface.js';

export { CLI_SURFACE };

/** Where the skills are being read: the active gateway session's platform, or `cli` outside the gateway. */
export function currentSurface(): string {
  return toolSurface();
}
