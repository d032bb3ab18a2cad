/**
 * `threadline send <target> <text>`: the send_message tool from outside the gateway, for a
 * script or a background command. Routing comes from the THREADLINE_SESSION_* variables (a
 * command started by /run has its own session's), so `origin` is the chat and thread that
 * started it. The delivery is recorded in the outbox of the data dir, where the running
 * gateway claims it within a second and sends it in turn.
 */
import { type Command } from 'commander';
import pino from 'pino';
import { resolve } from 'node:path';
import { isSet, readInteger, readText } from '../config/read-setting.js';
import { isDataDirLocked } from '../store/data-dir-lock.js';
import { ThreadlineError } from '../errors.js';
import type { Store } from '../store/store.js';
import { systemClock } from '../tools/clock.js';
import type { Deliverer } from '../tools/deliver-later.js';
import { executeTool } from '../tools/execute-tool.js';
import { ensureContext } from '../telemetry/install-context.js';
import { createSendMessage } from '../tools/send-message/index.js';
import { fail, withStore } from './cli-store.js';
import { dataDirOption } from './deliveries.js';
import type { CliIo } from './io.js';

export function registerSend(program: Command, io: CliIo): void {
  program
    .command('send')
    .description("send a message through the running gateway's outbox, as the send_message tool does")
    .argument('<target>', 'origin (the THREADLINE_SESSION_* chat and thread), home, home:<platform> or <platform>:<chat>[:<thread>]')
    .argument('<text...>', 'the message')
    .addOption(dataDirOption())
    .addHelpText('after', '\nExample, in a command started with /run:\n  threadline send origin "step 2 of 3 done"\n')
    .action(async (target: string, words: string[], options: { dataDir?: string }) => {
      // The session from the environment is entered like a gateway's: that needs a context manager.
      ensureContext();
      const answer = await withStore(options.dataDir, io, async (store) => {
        const tool = createSendMessage(
          { deliverer: outboxDeliverer(store), store, clock: systemClock, logger: pino({ level: 'silent' }), dataDir: '', platforms: enabledPlatforms(io.env) },
          { historyKeep: readInteger(io.env, 'THREADLINE_LLM_HISTORY_MESSAGES') },
        );
        // Whoever can run this on the host could run anything there: no admin check to make.
        return executeTool(tool, { target, text: words.join(' ') }, { signal: AbortSignal.timeout(30_000), authorize: async () => true });
      }).catch((error: unknown) => {
        if (error instanceof ThreadlineError) fail(io, `${error.message} [${error.code}]`);
        throw error;
      });
      const dataDir = resolve(options.dataDir ?? readText(io.env, 'THREADLINE_DATA_DIR'));
      io.out(
        isDataDirLocked(dataDir)
          ? `${answer.text.replace(/\.$/, '')}: queued; the running gateway sends it within a second\n`
          : `${answer.text.replace(/\.$/, '')}: queued in ${dataDir}; no gateway runs there now, so it is sent when one starts\n`,
      );
    });
}

/** Records each delivery in the outbox with a lease already over, so the gateway's loop claims it at once. */
function outboxDeliverer(store: Store): Deliverer {
  return {
    async deliver(request) {
      if (request.target?.to !== 'explicit') throw new ThreadlineError('TL_TARGET_INVALID', 'send resolves its target before it records the delivery');
      const now = Date.now();
      const { id, kind, text, origin } = request;
      await store.outbox.add({ id, kind, destination: request.target.destination, text, origin, createdAt: now }, now);
    },
  };
}

/** The platforms the gateway configured by the same environment enables. */
function enabledPlatforms(env: NodeJS.ProcessEnv): ReadonlySet<string> {
  const names = ['webhook'];
  if (isSet(env, 'THREADLINE_TELEGRAM_BOT_TOKEN')) names.push('telegram');
  if (isSet(env, 'THREADLINE_SLACK_BOT_TOKEN')) names.push('slack');
  if (isSet(env, 'THREADLINE_DISCORD_BOT_TOKEN')) names.push('discord');
  return new Set(names);
}
