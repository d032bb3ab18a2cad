import { createHash } from 'node:crypto';
import { hostname } from 'node:os';
import { resolve } from 'node:path';
import { ConfigError } from '../errors.js';
import { readText } from './read-setting.js';

const INSTANCE_ID = /^[A-Za-z0-9._-]{1,64}$/;

/**
 * THREADLINE_INSTANCE_ID, or by default the host and a digest of its data dir: what a
 * background command's pid and files are relative to, and the same after a restart.
 */
export function readInstanceId(env: NodeJS.ProcessEnv): string {
  const instanceId = readText(env, 'THREADLINE_INSTANCE_ID') ?? defaultInstanceId(readText(env, 'THREADLINE_DATA_DIR'));
  if (!INSTANCE_ID.test(instanceId)) {
    throw new ConfigError('THREADLINE_INSTANCE_ID', `"${instanceId.slice(0, 80)}" is not 1 to 64 letters, digits, ".", "_" or "-"`);
  }
  return instanceId;
}

function defaultInstanceId(dataDir: string): string {
  const host = hostname().replace(/[^A-Za-z0-9._-]/g, '-').slice(0, 48) || 'host';
  return `${host}-${createHash('sha1').update(resolve(dataDir)).digest('hex').slice(0, 8)}`;
}
