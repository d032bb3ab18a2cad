import type { Tool } from './tool.js';

/** Who a turn serves: what decides the tools it may offer a model. */
export interface ToolAudience {
  /** The platform of the turn's session. */
  readonly platform: string;
  /** The sender is in THREADLINE_ADMINS (proven by the platform). */
  readonly admin: boolean;
}

/**
 * The tools a turn may offer, and so the only ones it may run for a model: enabled, meant
 * for the turn's platform, and admin-only ones for admins alone. A model that is shown a
 * tool it may not use will try it.
 */
export function offeredTools(tools: Iterable<Tool>, audience: ToolAudience): Tool[] {
  const offered: Tool[] = [];
  for (const tool of tools) {
    if (!tool.enabled) continue;
    if (tool.platforms !== undefined && !tool.platforms.includes(audience.platform)) continue;
    if (tool.adminOnly && !audience.admin) continue;
    offered.push(tool);
  }
  return offered;
}
