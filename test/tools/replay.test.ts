import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CommandAgent } from '../../src/gateway/commands/command-agent.js';
import type { Agent } from '../../src/agent/agent.js';
import { executeTool } from '../../src/tools/execute-tool.js';
import { useTestGateways } from '../helpers/gateway.js';

const start = useTestGateways();

describe('a turn run again after it was cut short', () => {
  it('starts its background command and stores its reminder once, not once a run', async () => {
    let runs = 0;
    const g = await start({
      clock: 'manual',
      webhookToken: true,
      env: { THREADLINE_TERMINAL: '1', THREADLINE_ADMINS: '*', THREADLINE_SHUTDOWN_TIMEOUT_MS: '200' },
      agent: (toolbox): Agent => {
        const commands = new CommandAgent(toolbox.tools);
        return {
          async handle(turn) {
            await commands.handle(turn);
            // The first run is still going when the gateway stops: the message stays to run again.
            if (++runs <= 2) await new Promise((resolve) => turn.signal.addEventListener('abort', resolve, { once: true }));
          },
        };
      },
    });
    await g.send({ chat_id: 'ops', text: '/run sleep 600' });
    await g.send({ chat_id: 'team', text: '/remind 1h stand up' });
    await g.receiver.waitFor(2);
    await g.restart();
    // Both messages ran again: their acknowledgements keep their ids, so none arrives twice.
    await new Promise<void>((resolve) => {
      const check = (): void => void (runs >= 4 ? resolve() : setTimeout(check, 10));
      check();
    });
    const processes = await g.running.store.processes.all();
    expect(processes.map((record) => record.command)).toEqual(['sleep 600']);
    expect(await g.running.store.schedules.ofDestination({ platform: 'webhook', chatId: 'team' })).toHaveLength(1);
    await g.runTool('kill_process', { id: processes[0]!.id }, { platform: 'webhook', chatType: 'dm', chatId: 'ops' });
    // Its end reported and its directory gone before the gateway stops: nothing writes there as the test's data dir is removed.
    await expect.poll(async () => {
      await g.advanceTime(60_000);
      return (await g.running.store.processes.all()).length;
    }, { timeout: 15_000 }).toBe(0);
  });

  it('sets a reminder that ran before the replay once: the replay neither stores nor sends it again', async () => {
    let runs = 0;
    const g = await start({
      clock: 'manual',
      webhookToken: true,
      env: { THREADLINE_SHUTDOWN_TIMEOUT_MS: '200' },
      agent: (toolbox): Agent => {
        const commands = new CommandAgent(toolbox.tools);
        return {
          async handle(turn) {
            await commands.handle(turn);
            // The first run is still going when the gateway stops: the message stays to run again.
            if (++runs === 1) await new Promise((resolve) => turn.signal.addEventListener('abort', resolve, { once: true }));
          },
        };
      },
    });
    await g.send({ chat_id: 'team', text: '/remind 5m stand up' });
    const [ack] = await g.receiver.waitFor(1);
    expect(ack!.body.text).toMatch(/^Reminder c[0-9a-z]{5} set/);
    // The reminder runs while its turn is still open, and is gone from the store once it has.
    await g.advanceTime(5 * 60_000);
    const [, reminder] = await g.receiver.waitFor(2);
    expect(reminder!.body.text).toContain('stand up');
    expect(await g.running.store.schedules.all()).toEqual([]);
    await g.restart();
    // runs counts after the command: at 2 the replay's /remind has answered.
    await expect.poll(() => runs).toBe(2);
    expect(await g.running.store.schedules.all()).toEqual([]);
  });

  it('runs a foreground command once, and answers the replay with the result its first run recorded', async () => {
    const results: string[] = [];
    const g = await start({
      webhookToken: true,
      env: { THREADLINE_TERMINAL: '1', THREADLINE_ADMINS: '*', THREADLINE_SHUTDOWN_TIMEOUT_MS: '200' },
      agent: (toolbox): Agent => ({
        async handle(turn) {
          const terminal = toolbox.tools.get('terminal')!;
          // Appends a line and counts them: a second run would say 2, and leave two lines.
          const result = await executeTool(terminal, { command: 'echo ran >> ran.log; wc -l < ran.log' }, { signal: turn.signal, authorize: (name) => turn.authorize(name) });
          results.push(result.text);
          // The first run ends between the command's end and its answer: cut short, it runs again.
          if (results.length === 1) return new Promise((resolve) => turn.signal.addEventListener('abort', () => resolve(), { once: true }));
          await turn.reply(result.text);
        },
      }),
    });
    await g.send({ chat_id: 'ops', text: 'count the runs' });
    await expect.poll(() => results.length).toBe(1);
    await g.restart();
    const [reply] = await g.receiver.waitFor(1);
    expect(results).toHaveLength(2);
    expect(results[1]).toBe(results[0]);
    expect(reply!.body.text).toBe(results[0]);
    expect(reply!.body.text).toMatch(/^exit 0 \(.*\)\n\s*1\n$/);
    expect(readFileSync(join(g.dataDir, 'ran.log'), 'utf8')).toBe('ran\n');
  });

  it('sends a replayed turn\'s answer that differs from what its first run said at that place', async () => {
    let runs = 0;
    const g = await start({
      env: { THREADLINE_SHUTDOWN_TIMEOUT_MS: '200' },
      agent: {
        async handle(turn) {
          // The first run says something, then is cut short; the replay's model answers outright.
          if (++runs === 1) {
            await turn.reply('Let me look…');
            await new Promise((resolve) => turn.signal.addEventListener('abort', resolve, { once: true }));
            return;
          }
          await turn.reply('Here it is.');
        },
      },
    });
    await g.send({ chat_id: 'ops', text: 'where is it?' });
    await g.receiver.waitFor(1);
    await g.restart();
    const texts = (await g.receiver.waitFor(2)).map((delivery) => delivery.body.text);
    expect(texts).toEqual(['Let me look…', 'Here it is.']);
  });
});
