// Pitfalls "Stale environment fallback" and "Inherited environment in a child process": a child process gets its routing from its own session's env, never from
// a stale THREADLINE_SESSION_* in the parent's environment. /bin/sh, not node: 2,000 node
// processes would take minutes on two cores.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SESSION_ENV } from '../../../src/session/index.js';
import { SESSIONS, Probe, Semaphore, expectIsolation, forEachSession, hop, makeSessions, observedFromEnv } from './harness.js';
import { runtimes } from './runtime.js';

const run = promisify(execFile);
/** Prints each session variable that is set in the child, as NAME=value lines, with shell builtins only. */
const PRINT_SESSION_ENV = `printf '%s\\n' ${Object.keys(SESSION_ENV)
  .map((name) => `\${${name}+"${name}=$${name}"}`)
  .join(' ')}`;
const STALE = {
  THREADLINE_SESSION_CHAT_ID: 'stale-chat',
  THREADLINE_SESSION_THREAD_ID: 'stale-thread',
  THREADLINE_SESSION_ID: 'stale-session',
} as const;

function envFromOutput(output: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const line of output.split('\n')) {
    const separator = line.indexOf('=');
    if (separator > 0) env[line.slice(0, separator)] = line.slice(separator + 1);
  }
  return env;
}

describe.each(runtimes)('child processes: $name runtime', (runtime) => {
  const sessions = makeSessions(SESSIONS, 'c');
  const n = sessions.length;

  // What a gateway started by a session-aware parent, or left over from a test run, would have.
  beforeAll(() => {
    Object.assign(process.env, STALE);
  });
  afterAll(() => {
    for (const name of Object.keys(STALE)) delete process.env[name];
  });

  it('each child sees its own session in its env, never the stale one from the parent’s environment', async () => {
    const probe = new Probe(runtime);
    const slots = runtime.detached(() => new Semaphore(32));
    let staleLeaks = 0;
    await forEachSession(runtime, sessions, 'spawn', async (session, _index, rng) => {
      await hop(rng);
      await slots.use(async () => {
        probe.read(session, 'spawning');
        const { stdout } = await run('/bin/sh', ['-c', PRINT_SESSION_ENV], { env: runtime.childEnv() });
        if (stdout.includes('=stale-')) staleLeaks++;
        probe.compare(session, observedFromEnv(envFromOutput(stdout)), 'child process env');
      });
      probe.read(session, 'after the child exited');
    });
    if (runtime.isolates) expect(staleLeaks, 'children that saw a stale THREADLINE_SESSION_* value').toBe(0);
    await expectIsolation(probe, { reads: n * 3, spans: n * 2 });
  });
});
