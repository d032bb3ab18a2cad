import { EventEmitter } from 'node:events';
import type { SpawnedProcess, Spawner } from '../../../src/tools/terminal/index.js';

/** A wrapper that never forks: the test decides when it "exits" (after writing its status file itself). */
export class FakeChild extends EventEmitter {
  readonly stdin = Object.assign(new EventEmitter(), {
    said: [] as string[],
    end(this: { said: string[] }, text: string) {
      this.said.push(text.trim());
    },
  });
  readonly stdout = null;
  readonly stderr = null;

  constructor(readonly pid: number) {
    super();
  }

  unref(): void {}

  /** The dir argument the wrapper was given: `<dataDir>/processes/<id>`. */
  dir = '';
}

/** A Spawner of FakeChild, keeping each one for the test. */
export function fakeSpawner(): { spawner: Spawner; children: FakeChild[] } {
  const children: FakeChild[] = [];
  const spawner: Spawner = (_file, args) => {
    const child = new FakeChild(100_000 + children.length);
    child.dir = args[3] ?? '';
    children.push(child);
    return child as unknown as SpawnedProcess;
  };
  return { spawner, children };
}
