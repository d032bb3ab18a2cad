/**
 * CPU time of another process, read from /proc (Linux): the whole process, every thread it
 * has or had (/proc/<pid>/stat counts exited threads too), and its main thread apart
 * (/proc/<pid>/task/<pid>/stat), which in Node is the event loop. Threadline commits SQLite
 * on a worker thread and V8 scavenges on helper threads, so a figure of the event loop alone
 * (or the server's own `process.cpuUsage()` sampled on its busy event loop) would hide work
 * the message causes; reading from outside also needs no cooperation from the servers.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

/** Microseconds a clock tick of utime/stime stands for (USER_HZ). */
const US_PER_TICK = 1e6 / Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());

export interface CpuTime {
  /** utime + stime of the whole process, µs. */
  readonly totalUs: number;
  /** utime + stime of the main thread (the event loop), µs. */
  readonly mainUs: number;
}

function ticksOf(statPath: string): number {
  const stat = readFileSync(statPath, 'utf8');
  // The command name may hold spaces and parentheses: fields are counted after its last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // utime and stime are fields 14 and 15 of stat(5); fields[0] is field 3.
  return Number(fields[11]) + Number(fields[12]);
}

export function cpuTime(pid: number): CpuTime {
  return { totalUs: ticksOf(`/proc/${pid}/stat`) * US_PER_TICK, mainUs: ticksOf(`/proc/${pid}/task/${pid}/stat`) * US_PER_TICK };
}
