// The many-sessions scenario against a deliberately naive routing: one process-wide "current
// session", set when a turn starts and read where work is captured for later, as a gateway that
// keeps the chat in a global does. The same scenario that threadline passes must fail here,
// or it proves nothing.
import { describe, expect, it, vi } from 'vitest';
import type { Session } from '../../src/session/index.js';
import { CommandAgent } from '../../src/gateway/commands/command-agent.js';
import { runManySessions } from './many-sessions-scenario.js';

const naive = vi.hoisted(() => ({ current: undefined as Session | undefined }));

vi.mock('../../src/session/index.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../src/session/index.js')>();
  return {
    ...real,
    // Captures the process-wide current session instead of the context's.
    captureRouting: (ctx?: Parameters<typeof real.captureRouting>[0]) => {
      const captured = real.captureRouting(ctx);
      return naive.current === undefined ? captured : { ...captured, session: { ...naive.current } };
    },
  };
});

describe('the many-sessions scenario against a process-wide current session', () => {
  it('misroutes notifications and reminders: the scenario can fail', async () => {
    const result = await runManySessions(200, {
      agent: (toolbox) => {
        const commands = new CommandAgent(toolbox.tools);
        return {
          handle: (turn) => {
            naive.current = turn.session;
            return commands.handle(turn);
          },
        };
      },
    });
    // Misrouted, not lost: reports went to another session's chat or thread.
    expect(result.misplaced.filter((line) => line.includes(' went to ')).length).toBeGreaterThan(0);
  }, 300_000);
});
