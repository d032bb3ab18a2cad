import { isSecretVariable } from './secret-variables.js';

/**
 * Takes the gateway's secrets out of `env` once they have been read, so nothing the process
 * starts later (an encoder, a library's helper) inherits them. /proc/<pid>/environ still shows
 * the environment the process began with: a command run as another user cannot read it.
 * Returns the names removed.
 */
export function scrubSecrets(env: NodeJS.ProcessEnv = process.env): string[] {
  const removed: string[] = [];
  for (const name of Object.keys(env)) {
    if (!isSecretVariable(name)) continue;
    delete env[name];
    removed.push(name);
  }
  return removed;
}
