import { ThreadlineError } from './errors.js';

/**
 * Ends the process for an error at start-up: a ThreadlineError (bad configuration, no
 * context manager) as one line that says what to fix; anything else is rethrown with its
 * stack, because it is a bug.
 */
export function exitOnStartupError(error: unknown): never {
  if (!(error instanceof ThreadlineError)) throw error;
  process.stderr.write(`threadline: ${error.message} [${error.code}]\n`);
  process.exit(1);
}
