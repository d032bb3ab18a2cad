/**
 * `threadline send <target> <text>`: the send_message tool from outside the gateway, for a
 * script or a background command. Routing comes from the THREADLINE_SESSION_* variables (a
 * command started by /run has its own session's), so `origin` is the chat and thread that
 * started it. The delivery is recorded in the outbox the gateway sends from: the Redis one when
 * the gateway runs on Redis, else the data dir's, whose gateway claims it within a second.
 * A command started by /run is told which by the gateway (THREADLINE_SEND_STORE and the
 * settings beside it, src/start/command-settings.ts); a send that cannot reach that outbox
 * fails with exit 1 and records nothing.
 */
import { type Command } from 'commander';
import pino from 'pino';
import { resolve } from 'node:path';
import { isSet, readInteger, readText } from '../config/read-setting.js';
import { commaList } from '../env-vars.js';
import { readBackend } from '../store/data-dir-backend.js';
import { isDataDirLocked } from '../store/data-dir-lock.js';
import { ConfigError, ThreadlineError } from '../errors.js';
import type { AnyStore } from '../store/store.js';
import { systemClock } from '../tools/clock.js';
import type { Deliverer } from '../tools/deliver-later.js';
import { executeTool } from '../tools/execute-tool.js';
import { ensureContext } from '../telemetry/install-context.js';
import { createSendMessage } from '../tools/send-message/index.js';
import { fail, orFail, withGatewayStore, withStore } from './cli-store.js';
import { dataDirOption } from './deliveries.js';
import type { CliIo } from './io.js';

/** What a platform's name may be: a setting that lists another fails before anything is opened. */
const PLATFORM_NAME = /^[a-z][a-z0-9_-]{0,31}$/;
const SEND_STORES = ['auto', 'sqlite', 'redis'] as const;
type SendStore = (typeof SEND_STORES)[number];

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
      const platforms = orFail(io, () => sendPlatforms(io.env));
      const chosen = orFail(io, () => sendStore(io.env));
      const where = orFail(io, () => outboxOf(chosen, io.env));
      const send = async (store: AnyStore) => {
        const tool = createSendMessage(
          { deliverer: outboxDeliverer(store), store, clock: systemClock, logger: pino({ level: 'silent' }), dataDir: '', platforms },
          { historyKeep: readInteger(io.env, 'THREADLINE_LLM_HISTORY_MESSAGES') },
        );
        // Whoever can run this on the host could run anything there: no admin check to make.
        return executeTool(tool, { target, text: words.join(' ') }, { signal: AbortSignal.timeout(30_000), authorize: async () => true });
      };
      const dataDir = resolve(options.dataDir ?? readText(io.env, 'THREADLINE_DATA_DIR'));
      const running = where === 'sqlite' && isDataDirLocked(dataDir);
      // A store file left from before a move to Redis is read by no gateway on Redis; told `sqlite`, the next one to start may.
      if (where === 'sqlite' && readBackend(dataDir) === 'redis' && (running || chosen === 'auto')) {
        fail(
          io,
          `The last gateway started on ${dataDir} keeps its outbox on Redis, not in this data dir's store: set THREADLINE_REDIS_URL (and THREADLINE_REDIS_PREFIX) as that gateway has them, ` +
            'or THREADLINE_SEND_STORE=sqlite once it is stopped, if it is to run on SQLite again. Nothing was sent [TL_CONFIG_INVALID]',
        );
      }
      const answer = await (where === 'redis' ? withGatewayStore(options.dataDir, io, send) : withStore(options.dataDir, io, send)).catch((error: unknown) => {
        if (error instanceof ThreadlineError) fail(io, `${error.message} [${error.code}]`);
        throw error;
      });
      const sent = answer.text.replace(/\.$/, '');
      if (where === 'redis') {
        io.out(`${sent}: queued in the Redis outbox; the gateway's instances that send deliveries send it\n`);
        return;
      }
      io.out(
        running
          ? `${sent}: queued; the running gateway sends it within a second\n`
          : `${sent}: queued in ${dataDir}; no gateway runs there now, so it is sent when one starts\n`,
      );
    });
}

/** Records each delivery in the outbox with a lease already over, so the gateway's loop claims it at once. */
function outboxDeliverer(store: AnyStore): Deliverer {
  return {
    async deliver(request) {
      if (request.target?.to !== 'explicit') throw new ThreadlineError('TL_TARGET_INVALID', 'send resolves its target before it records the delivery');
      const now = Date.now();
      const { id, kind, text, origin } = request;
      await store.outbox.add({ id, kind, destination: request.target.destination, text, origin, createdAt: now }, now);
    },
  };
}

/** THREADLINE_SEND_STORE, checked. */
function sendStore(env: NodeJS.ProcessEnv): SendStore {
  const store = readText(env, 'THREADLINE_SEND_STORE').toLowerCase();
  if (!(SEND_STORES as readonly string[]).includes(store)) throw new ConfigError('THREADLINE_SEND_STORE', `"${store.slice(0, 40)}" is not one of ${SEND_STORES.join(', ')}`);
  return store as SendStore;
}

/**
 * The outbox the message goes to: the Redis one or the data dir's. THREADLINE_SEND_STORE=redis
 * without a URL is refused here, before anything is opened: the data dir's store would be one
 * nobody reads.
 */
function outboxOf(store: SendStore, env: NodeJS.ProcessEnv): 'sqlite' | 'redis' {
  const hasUrl = isSet(env, 'THREADLINE_REDIS_URL');
  if (store === 'sqlite') return 'sqlite';
  if (store === 'auto') return hasUrl ? 'redis' : 'sqlite';
  if (hasUrl) return 'redis';
  throw new ConfigError(
    'THREADLINE_SEND_STORE',
    "is redis (the gateway keeps its outbox on Redis) and THREADLINE_REDIS_URL is not set: a command's environment has it only when it holds no password. " +
      'Nothing was sent; send from the chat (/send, send_message) instead, or, outside a command, set THREADLINE_REDIS_URL',
  );
}

/** THREADLINE_SEND_PLATFORMS, else the platforms a gateway configured by this same environment enables. */
function sendPlatforms(env: NodeJS.ProcessEnv): ReadonlySet<string> {
  const listed = readText(env, 'THREADLINE_SEND_PLATFORMS');
  if (listed !== undefined) {
    const names = commaList(listed);
    const bad = names.find((name) => !PLATFORM_NAME.test(name));
    if (bad !== undefined || names.length === 0) throw new ConfigError('THREADLINE_SEND_PLATFORMS', 'must list platform names (letters, digits, - and _), comma-separated, such as webhook,telegram');
    return new Set(names);
  }
  const names = ['webhook'];
  if (isSet(env, 'THREADLINE_TELEGRAM_BOT_TOKEN')) names.push('telegram');
  if (isSet(env, 'THREADLINE_SLACK_BOT_TOKEN')) names.push('slack');
  if (isSet(env, 'THREADLINE_MATTERMOST_URL') && isSet(env, 'THREADLINE_MATTERMOST_TOKEN')) names.push('mattermost');
  if (isSet(env, 'THREADLINE_MATRIX_HOMESERVER_URL') && isSet(env, 'THREADLINE_MATRIX_ACCESS_TOKEN')) names.push('matrix');
  if (isSet(env, 'THREADLINE_DISCORD_BOT_TOKEN')) names.push('discord');
  return new Set(names);
}
