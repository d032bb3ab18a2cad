/**
 * A trace file the gateway wrote itself, for the forensics commands' end-to-end tests: a test
 * gateway (manual clock) answers a thousand webhook messages in many chats and threads, runs
 * reminders, cron jobs (to the origin and to the home channel), watched commands and explicit
 * sends, and meanwhile one turn replies in another session's context (a misroute the guard
 * flags and lets through), one reminder's delivery is refused for good (a dead letter), and a
 * second gateway under THREADLINE_STRICT_ROUTING=1 refuses another misroute. Every span goes
 * through the gateway's FileSpanExporter with small limits, so the file rotates.
 */
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { resourceFromAttributes } from '@opentelemetry/resources';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import type { Agent, Turn } from '../../src/agent/agent.js';
import { CommandAgent } from '../../src/gateway/commands/command-agent.js';
import { runThreadline } from '../../src/cli/threadline.js';
import { captureRouting, withSession, type Session } from '../../src/session/index.js';
import type { DeliveryRouter } from '../../src/deliveries/router.js';
import { FileSpanExporter } from '../../src/telemetry/file-span-exporter.js';
import { startTestGateway, type TestGateway } from '../../src/testing/index.js';
import type { Toolbox } from '../../src/tools/toolbox.js';
import { until } from '../helpers/gateway.js';

const MINUTE = 60_000;

/** The conversation where the misroute happens: build threads of one CI chat. */
export const CI_CHAT = 'ci-builds';
/** Asked in this thread… */
export const ASKED_THREAD = 'build-17';
/** …answered in this one: "the build result went to the wrong thread". */
export const WRONG_THREAD = 'build-42';
/** The strict gateway's turn: asked here, refused before it reached WRONG_THREAD. */
export const REFUSED_THREAD = 'build-51';
/** The question whose answer the agent sends in another session's context. */
export const MISROUTE_QUESTION = 'did build 17 pass?';
/** Where the reminder that is refused for good was set. */
export const LOST_CHAT = 'ops-alerts';
export const LOST_REMINDER_TEXT = 'rotate the on-call pager';
/** The home channel, target of a cron job set elsewhere. */
export const HOME_CHAT = 'home-room';
/** Where explicit sends go (send_message and `threadline send`). */
export const ANNOUNCE_CHAT = 'announcements';
/** A chat that took part in nothing wrong. */
export const QUIET_CHAT = 'team-3';
/** The service name the spans are written under, as `npm start` names it. */
export const SERVICE = 'threadline';

export interface GatewayTraces {
  /** The live trace file; its rotated files sit beside it (`.1` … ). */
  readonly file: string;
  /** Every file written, newest first (`traces.jsonl`, `traces.jsonl.1`, …). */
  readonly files: readonly string[];
  /** A copy of the first gateway's data dir, its store closed: holds the dead letter. */
  readonly dataDir: string;
  /** Every line of every file, oldest first: OTLP/JSON ExportTraceServiceRequests. */
  readonly lines: readonly unknown[];
  /** Deliveries handed to their platform (distinct delivery ids, the misroute not counted). */
  readonly goodDeliveries: number;
  readonly misroute: { readonly deliveryId: string; readonly traceId: string };
  readonly refused: { readonly deliveryId: string; readonly traceId: string };
  /** The dead letter: a reminder set by a message (setTraceId) whose run (runTraceId, a cron.run root) was refused. */
  readonly lost: { readonly deliveryId: string; readonly scheduleId: string; readonly setTraceId: string; readonly runTraceId: string; readonly lastError: string };
  /** The trace of a reminder set in QUIET_CHAT thread topic-1 and the trace of its run. */
  readonly quietReminder: { readonly setTraceId: string; readonly runTraceId: string };
  /** Delivery ids of deliveries to another chat than their work's, on purpose: home and explicit. */
  readonly elsewhere: readonly string[];
}

/** Runs `tasks`, at most `limit` at once. */
async function pooled(tasks: readonly (() => Promise<unknown>)[], limit: number): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < tasks.length) await tasks[next++]!();
    }),
  );
}

/**
 * The command agent, except for MISROUTE_QUESTION: that answer is sent while the session of
 * WRONG_THREAD is active, as a context leaking between turns would do.
 */
function leakyAgent(toolbox: Toolbox): Agent {
  const commands = new CommandAgent(toolbox.tools);
  const seen = new Map<string, Session>();
  return {
    handle: async (turn: Turn) => {
      if (turn.session.threadId !== undefined) seen.set(turn.session.threadId, turn.session);
      const leaked = seen.get(WRONG_THREAD);
      if (turn.text === MISROUTE_QUESTION && leaked !== undefined) {
        // turn.reply() always answers its own thread: the leak goes through the router, as a callback's would.
        const origin = captureRouting();
        return withSession(leaked, () =>
          leakRouter!.deliver({ id: `${turn.messageId}/leak`, kind: 'reply', text: 'build 17 passed: 412 tests, 0 failures', origin }),
        );
      }
      return commands.handle(turn);
    },
  };
}

/** The router of the gateway the leaky agent runs in, set once it started. */
let leakRouter: DeliveryRouter | undefined;

/** POSTs a webhook message and expects it accepted; returns its trace id. */
async function say(g: TestGateway, chat: string, thread: string | undefined, text: string): Promise<string> {
  const answer = await g.send({ chat_id: chat, ...(thread === undefined ? {} : { thread_id: thread }), chat_type: 'group', user_id: 'u-7', text });
  if (answer.status !== 202) throw new Error(`message "${text}" to ${chat}: HTTP ${answer.status} ${JSON.stringify(answer.body)}`);
  return String(answer.body['trace_id']);
}

/** Sends and waits for `count` new deliveries at the receiver. */
async function sayAndWait(g: TestGateway, chat: string, thread: string | undefined, text: string, count = 1): Promise<string> {
  const before = g.receiver.unique().size;
  const traceId = await say(g, chat, thread, text);
  await g.receiver.waitFor(before + count);
  return traceId;
}

const GATEWAY_ENV = {
  // Lenient: the misroutes this fixture makes are sent, as a gateway that opted out would.
  THREADLINE_STRICT_ROUTING: '0',
  THREADLINE_ADMINS: '*',
  THREADLINE_TERMINAL: '1',
  THREADLINE_QUEUE_CAPACITY: '5000',
};

/** Builds the fixture under `dir` (which the caller removes). Takes about 10 s. */
export async function buildGatewayTraces(dir: string, options: { messages?: number } = {}): Promise<GatewayTraces> {
  const messages = options.messages ?? 1_000;
  const spansBefore = new Set<ReadableSpan>();
  const g = await startTestGateway({ clock: 'manual', webhookToken: true, env: GATEWAY_ENV, agent: leakyAgent });
  leakRouter = g.running.gateway.router;
  // The process keeps every test gateway's spans: only those from here on are this fixture's.
  for (const span of g.telemetry.spans()) spansBefore.add(span);
  let lost: GatewayTraces['lost'];
  let misroute: GatewayTraces['misroute'];
  let quietReminder: GatewayTraces['quietReminder'];
  const elsewhere: string[] = [];
  const dataDir = join(dir, 'data');
  try {
    // The lost reminder first, while nothing else is in flight: its one delivery gets the 400.
    const lostSetTrace = await sayAndWait(g, LOST_CHAT, undefined, `/remind 1m ${LOST_REMINDER_TEXT}`);
    g.receiver.failNext(1, 400);
    await g.advanceTime(MINUTE);
    await until(async () => (await g.deliveries({ failedOnly: true })).length === 1);
    const [dead] = await g.deliveries({ failedOnly: true });
    // A run's delivery id is cron:<schedule id>:<due time>.
    lost = { deliveryId: dead!.id, scheduleId: dead!.id.split(':')[1]!, setTraceId: lostSetTrace, runTraceId: '', lastError: dead!.lastError ?? '' };

    // Home channel and the cron job that delivers there from another chat.
    await sayAndWait(g, HOME_CHAT, undefined, '/sethome');
    await sayAndWait(g, 'team-1', undefined, '/cron "*/20 * * * *" --to home nightly digest');
    // Routine traffic: 25 chats, 8 threads each and the chat itself.
    const chats = Array.from({ length: 25 }, (_, i) => `team-${i}`);
    const texts = ['/help', '/status', 'hello', 'what is up', '/cron list'];
    const tasks = Array.from({ length: messages }, (_, i) => {
      const chat = chats[i % chats.length]!;
      const thread = i % 9 === 0 ? undefined : `topic-${i % 9}`;
      return () => say(g, chat, thread, `${texts[i % texts.length]!}${texts[i % texts.length]!.startsWith('/') ? '' : ` ${i}`}`);
    });
    const before = g.receiver.unique().size;
    await pooled(tasks, 32);
    await g.receiver.waitFor(before + messages, 60_000);

    // The misroute: a message in WRONG_THREAD (so its session is known), then the question in ASKED_THREAD.
    await sayAndWait(g, CI_CHAT, WRONG_THREAD, 'starting build 42');
    const misrouteTrace = await sayAndWait(g, CI_CHAT, ASKED_THREAD, MISROUTE_QUESTION);
    misroute = { deliveryId: '', traceId: misrouteTrace };

    // Watched commands, reminders, a repeating cron job, explicit sends.
    for (const n of [1, 2, 3]) await sayAndWait(g, CI_CHAT, `build-${n}`, `/run echo build ${n} ok`, 2);
    const reminderBefore = g.receiver.unique().size;
    const reminderTasks = Array.from({ length: 40 }, (_, i) => () => say(g, chats[i % chats.length]!, `topic-${1 + (i % 8)}`, `/remind ${1 + (i % 50)}m check item ${i}`));
    await pooled(reminderTasks, 8);
    await g.receiver.waitFor(reminderBefore + 40);
    const quietSetTrace = await sayAndWait(g, QUIET_CHAT, 'topic-1', '/remind 55m water the plants');
    await sayAndWait(g, 'team-2', 'topic-2', '/cron "*/10 * * * *" stand-up in ten');
    const cronBefore = g.receiver.unique().size;
    await g.runTool('send_message', { target: `webhook:${ANNOUNCE_CHAT}`, text: 'release 1.4 is out' }, { platform: 'webhook', chatId: 'team-4', chatType: 'group', threadId: 'topic-4' });
    await sendFromOutside(g);

    await g.advanceTime(60 * MINUTE);
    // Two explicit sends, 41 reminders, 6 stand-ups, 3 digests to home.
    await g.receiver.waitFor(cronBefore + 2 + 41 + 6 + 3, 30_000);
    await until(async () => (await g.running.gateway.health()).outbox.open === 0);
    quietReminder = { setTraceId: quietSetTrace, runTraceId: g.receiver.received.find((d) => d.body.kind === 'cron' && d.body.text.includes('water the plants'))!.body.trace_id };
  } finally {
    await g.running.stop();
    mkdirSync(dataDir, { recursive: true });
    for (const name of ['threadline.db', 'threadline.db-wal', 'threadline.db-shm']) {
      if (existsSync(join(g.dataDir, name))) copyFileSync(join(g.dataDir, name), join(dataDir, name));
    }
    await g.receiver.close();
    rmSync(g.dataDir, { recursive: true, force: true });
  }

  const refused = await strictGatewayRefuses();
  const spans = g.telemetry.spans().filter((span) => !spansBefore.has(span));
  const file = join(dir, 'traces.jsonl');
  await writeThroughExporter(file, spans);

  const files = [file];
  for (let i = 1; existsSync(`${file}.${i}`); i++) files.push(`${file}.${i}`);
  const lines = [...files].reverse().flatMap((path) => readFileSync(path, 'utf8').split('\n').filter((line) => line !== '').map((line) => JSON.parse(line) as unknown));
  const delivers = spans.filter((span) => span.name === 'gateway.deliver');
  const lostRun = spans.find((span) => span.name === 'cron.run' && span.attributes['delivery.id'] === lost.deliveryId)!;
  lost = { ...lost, runTraceId: lostRun.spanContext().traceId };
  misroute = { ...misroute, deliveryId: String(delivers.find((span) => span.spanContext().traceId === misroute.traceId)!.attributes['delivery.id']) };
  elsewhere.push(
    ...new Set(
      delivers
        .filter((span) => span.attributes['delivery.target'] === 'home' || span.attributes['delivery.target'] === 'explicit' || span.attributes['delivery.kind'] === 'send')
        .map((span) => String(span.attributes['delivery.id'])),
    ),
  );
  const sent = new Set(
    delivers
      .filter((span) => !span.events.some((event) => event.name === 'exception' || event.name === 'routing.mismatch') && span.attributes['delivery.queued'] !== true)
      .map((span) => String(span.attributes['delivery.id'])),
  );
  return { file, files, dataDir, lines, goodDeliveries: sent.size, misroute, refused, lost, quietReminder, elsewhere };
}

/** `threadline send` from a command started in team-5 topic-5: recorded in the outbox, sent by the gateway's loop. */
async function sendFromOutside(g: TestGateway): Promise<void> {
  const session = { THREADLINE_SESSION_PLATFORM: 'webhook', THREADLINE_SESSION_CHAT_ID: 'team-5', THREADLINE_SESSION_CHAT_TYPE: 'group', THREADLINE_SESSION_THREAD_ID: 'topic-5' };
  // `send` reads the session as a command started by /run has it: from the process environment.
  const saved = Object.fromEntries(Object.keys(session).map((name) => [name, process.env[name]]));
  Object.assign(process.env, session);
  let err = '';
  try {
    const code = await runThreadline(['send', `webhook:${ANNOUNCE_CHAT}:deploys`, 'deploy', 'finished', '--data-dir', g.dataDir], {
      out: () => {},
      err: (text) => void (err += text),
      env: { ...process.env },
    });
    if (code !== 0) throw new Error(`threadline send failed: ${err}`);
  } finally {
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  }
}

/** A second gateway, strict: the same leak is refused. Returns the refused delivery and its trace. */
async function strictGatewayRefuses(): Promise<GatewayTraces['refused']> {
  const g = await startTestGateway({ clock: 'manual', webhookToken: true, env: { ...GATEWAY_ENV, THREADLINE_STRICT_ROUTING: '1' }, agent: leakyAgent });
  leakRouter = g.running.gateway.router;
  try {
    await sayAndWait(g, CI_CHAT, WRONG_THREAD, 'starting build 42 again');
    // The turn fails on the refusal; the gateway apologizes in the asking thread.
    const traceId = await sayAndWait(g, CI_CHAT, REFUSED_THREAD, MISROUTE_QUESTION);
    await g.waitForSpans(traceId, ['gateway.message']);
    const deliver = g.telemetry.spans(traceId).find((span) => span.name === 'gateway.deliver' && span.events.some((event) => event.name === 'routing.mismatch'))!;
    return { deliveryId: String(deliver.attributes['delivery.id']), traceId };
  } finally {
    await g.stop();
  }
}

/** The resource `npm start` gives its spans (the test provider has none of its own). */
const RESOURCE = resourceFromAttributes({ 'service.name': SERVICE, 'service.version': '0.0.0-test' });

/** Writes `spans` in batches of 200, as the batch processor would, through the gateway's exporter; small files, so it rotates. */
async function writeThroughExporter(file: string, spans: readonly ReadableSpan[]): Promise<void> {
  const exporter = new FileSpanExporter(file, { maxBytes: 2 * 1024 * 1024, keep: 20 });
  const withResource = spans.map((span) => Object.create(span, { resource: { value: RESOURCE } }) as ReadableSpan);
  for (let i = 0; i < withResource.length; i += 200) {
    await new Promise<void>((resolve, reject) =>
      exporter.export(withResource.slice(i, i + 200), (result) => (result.error === undefined ? resolve() : reject(result.error))),
    );
  }
  await exporter.shutdown();
}
