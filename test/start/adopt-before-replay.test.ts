import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Agent } from '../../src/agent/agent.js';
import { CommandAgent } from '../../src/gateway/commands/command-agent.js';
import { useTestGateways } from '../helpers/gateway.js';

const start = useTestGateways();

describe('a gateway starting after a crash', () => {
  it('adopts the process directories an earlier process left before a replayed /run runs, which then runs once', async () => {
    let runs = 0;
    let orphan = '';
    let orphanLeftAtReplay: boolean | undefined;
    const g = await start({
      webhookToken: true,
      env: { THREADLINE_TERMINAL: '1', THREADLINE_ADMINS: '*', THREADLINE_SHUTDOWN_TIMEOUT_MS: '200' },
      agent: (toolbox): Agent => {
        const commands = new CommandAgent(toolbox.tools);
        return {
          async handle(turn) {
            // The first run is cut short before its command starts: the message stays to run again.
            if (++runs === 1) return new Promise((resolve) => turn.signal.addEventListener('abort', () => resolve(), { once: true }));
            // What start-up cleans up must be cleaned up before this turn makes its own directory.
            orphanLeftAtReplay = existsSync(orphan);
            await commands.handle(turn);
          },
        };
      },
    });
    orphan = join(g.dataDir, 'processes', 'pzzzzz');
    await g.send({ chat_id: 'ops', text: '/run echo ran >> ran.log' });
    await expect.poll(() => runs).toBe(1);
    // A directory no record names, as a crash between a wrapper's spawn and its record leaves.
    mkdirSync(orphan, { recursive: true });
    await g.restart();

    const [started, done] = await g.receiver.waitFor(2);
    expect(orphanLeftAtReplay).toBe(false);
    expect(started!.body.text).toMatch(/^Started p[0-9a-z]{5} /);
    expect(done!.body).toMatchObject({ kind: 'notification', chat_id: 'ops' });
    expect(done!.body.text).toMatch(/finished: exit 0/);
    expect(readFileSync(join(g.dataDir, 'ran.log'), 'utf8')).toBe('ran\n');
  });
});
