import { EventEmitter } from 'node:events';
import type { SpawnedProcess, Spawner } from '../../src/tools/terminal/index.js';

/** A wrapper that never forks and never exits: the watcher's side of a process, without the process. */
class FakeWrapper extends EventEmitter {
  readonly stdin = Object.assign(new EventEmitter(), { end: () => undefined });
  readonly stdout = null;
  readonly stderr = null;

  constructor(readonly pid: number) {
    super();
  }

  unref(): void {}
}

let nextPid = 1_000_000;

/** Spawns FakeWrappers: thousands of watchers cost no fork. */
export const fakeSpawner: Spawner = () => new FakeWrapper(nextPid++) as unknown as SpawnedProcess;

/** `count` fake wrappers, to weigh what the fakes themselves cost. */
export function fakeWrappers(count: number): unknown[] {
  return Array.from({ length: count }, () => fakeSpawner('/bin/sh', [], {}));
}
