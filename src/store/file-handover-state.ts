import { readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { HandoverState, HandoverStateFactory } from '../lease/handover-state.js';

/**
 * Handover state in the data dir, for one instance across its restarts: `handover-<name>.json`,
 * replaced whole (written beside, then renamed), so a crash never leaves half a value.
 */
export function fileHandoverState(dataDir: string): HandoverStateFactory {
  return (name): HandoverState => {
    const path = join(dataDir, `handover-${name}.json`);
    return {
      read: async () => {
        try {
          return await readFile(path, 'utf8');
        } catch {
          return undefined;
        }
      },
      write: async (value) => {
        const next = `${path}.${process.pid}.tmp`;
        await writeFile(next, value);
        await rename(next, path);
      },
    };
  };
}
