import { describe, expect, it } from 'vitest';
import { CommandAgent } from '../../src/gateway/commands/command-agent.js';
import type { Agent } from '../../src/agent/agent.js';
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
