import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';

/** What the terminal needs of a spawned process: a real ChildProcess, or a bench's fake. */
export type SpawnedProcess = Pick<ChildProcess, 'pid' | 'stdin' | 'stdout' | 'stderr' | 'once' | 'off' | 'unref'>;

/** Starts a process; injectable so a bench can run thousands of watchers without forking. */
export type Spawner = (file: string, args: readonly string[], options: SpawnOptions) => SpawnedProcess;

/** node:child_process spawn. */
export const nodeSpawner: Spawner = (file, args, options) => spawn(file, args, options);
