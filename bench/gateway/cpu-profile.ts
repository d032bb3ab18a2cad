/**
 * Reads a V8 .cpuprofile (node --cpu-prof) and sums its samples' self time by function and
 * by area (an npm package, a threadline file, a Node internal module, or V8's own entries
 * such as the garbage collector), counting only samples inside given time windows.
 */
import { readFileSync } from 'node:fs';

interface CallFrame {
  readonly functionName: string;
  readonly url: string;
  readonly lineNumber: number;
}

interface ProfileNode {
  readonly id: number;
  readonly callFrame: CallFrame;
  readonly children?: readonly number[];
}

interface CpuProfile {
  readonly nodes: readonly ProfileNode[];
  readonly startTime: number;
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

/** Self time in µs by key. */
export type SelfTime = Map<string, number>;

export interface ProfileSums {
  readonly byArea: SelfTime;
  readonly byFunction: SelfTime;
  /** Self time of every sample in the windows but V8's "(idle)". */
  readonly busyUs: number;
  /** By function: self time by the chain of its nearest callers, to tell whose call it is. */
  readonly callers: Map<string, SelfTime>;
}

const CALLER_DEPTH = 4;

/** Where a frame's code lives, coarse enough to add up across a message's path. */
export function areaOf(frame: CallFrame, threadlineDir: string): string {
  const { url, functionName } = frame;
  if (url === '') return functionName === '' ? '(anonymous native)' : functionName;
  if (url.startsWith('node:')) return url.replace('node:internal/', 'node:');
  const path = url.replace(/^file:\/\//, '');
  if (path.startsWith(threadlineDir)) return `threadline ${path.slice(threadlineDir.length).replace(/^\//, '')}`;
  const nodeModules = path.lastIndexOf('/node_modules/');
  if (nodeModules >= 0) {
    const [first, second] = path.slice(nodeModules + '/node_modules/'.length).split('/');
    return first!.startsWith('@') ? `${first}/${second}` : first!;
  }
  return path;
}

/**
 * Sums self time of the samples whose time (µs, CLOCK_MONOTONIC) falls in one of `windows`;
 * code under `threadlineDir` (the build the server ran) is named by its file there.
 */
export function sumProfile(path: string, windows: readonly (readonly [number, number])[], threadlineDir: string): ProfileSums {
  const profile = JSON.parse(readFileSync(path, 'utf8')) as CpuProfile;
  const frames = new Map(profile.nodes.map((node) => [node.id, node.callFrame]));
  const parents = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parents.set(child, node.id);
  const nameOf = (frame: CallFrame) => `${frame.functionName || '(anonymous)'} ${areaOf(frame, threadlineDir)}:${frame.lineNumber + 1}`;
  const callerChain = (id: number) => {
    const chain: string[] = [];
    for (let parent = parents.get(id); parent !== undefined && chain.length < CALLER_DEPTH; parent = parents.get(parent)) {
      chain.push(nameOf(frames.get(parent)!));
    }
    return chain.join(' ← ');
  };
  const byArea: SelfTime = new Map();
  const byFunction: SelfTime = new Map();
  const callers = new Map<string, SelfTime>();
  let busyUs = 0;
  const add = (map: SelfTime, key: string, us: number) => map.set(key, (map.get(key) ?? 0) + us);
  let at = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    at += profile.timeDeltas[i]!;
    if (!windows.some(([from, to]) => at >= from && at < to)) continue;
    // A sample stands for the time until the next one.
    const us = profile.timeDeltas[i + 1] ?? 0;
    const frame = frames.get(profile.samples[i]!)!;
    if (frame.functionName === '(idle)') continue;
    busyUs += us;
    const name = nameOf(frame);
    add(byArea, areaOf(frame, threadlineDir), us);
    add(byFunction, name, us);
    if (!callers.has(name)) callers.set(name, new Map());
    add(callers.get(name)!, callerChain(profile.samples[i]!), us);
  }
  return { byArea, byFunction, busyUs, callers };
}
