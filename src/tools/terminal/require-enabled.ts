import { ThreadlineError } from '../../errors.js';
import type { TerminalConfig } from '../tools-config.js';

/** TL_TOOL_DISABLED unless THREADLINE_TERMINAL=1: every terminal tool checks first. */
export function requireEnabled(config: TerminalConfig): void {
  if (!config.enabled) {
    throw new ThreadlineError('TL_TOOL_DISABLED', 'The terminal is off in this gateway; the operator enables it with THREADLINE_TERMINAL=1');
  }
}
