// Each tool outside the gateway (no session: the THREADLINE_SESSION_* variables name one) and
// inside it (the context's session, the variables never read), including an explicitly empty
// thread that must not fall back to a stale value.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { withSession, type SessionInput } from '../../src/session/index.js';
import { SqliteStore } from '../../src/store/sqlite-store.js';
import { ManualClock } from '../../src/tools/clock.js';
import { executeTool } from '../../src/tools/execute-tool.js';
import { createToolbox, type Toolbox } from '../../src/tools/toolbox.js';
import { readToolsConfig } from '../../src/tools/tools-config.js';
import { RecordingDeliverer } from './terminal/recording-deliverer.js';

const VARIABLES = ['THREADLINE_SESSION_PLATFORM', 'THREADLINE_SESSION_CHAT_ID', 'THREADLINE_SESSION_CHAT_TYPE', 'THREADLINE_SESSION_THREAD_ID'];
const NO_THREAD: SessionInput = { platform: 'webhook', chatType: 'group', chatId: 'ctx-chat' };

let dir: string;
let store: SqliteStore;
let toolbox: Toolbox;
let deliverer: RecordingDeliverer;
let clock: ManualClock;
const saved = new Map<string, string | undefined>();

beforeEach(async () => {
  for (const name of VARIABLES) saved.set(name, process.env[name]);
  Object.assign(process.env, {
    THREADLINE_SESSION_PLATFORM: 'webhook',
    THREADLINE_SESSION_CHAT_ID: 'env-chat',
    THREADLINE_SESSION_CHAT_TYPE: 'group',
    THREADLINE_SESSION_THREAD_ID: 'stale-thread',
  });
  dir = mkdtempSync(join(tmpdir(), 'threadline-env-'));
  store = await SqliteStore.open(join(dir, 'threadline.db'));
  deliverer = new RecordingDeliverer();
  clock = new ManualClock();
  toolbox = createToolbox(
    { deliverer, store, clock, logger: pino({ level: 'silent' }), dataDir: dir, platforms: new Set(['webhook']) },
    readToolsConfig({ THREADLINE_TERMINAL: '1' }, dir),
  );
  await toolbox.start();
});

afterEach(async () => {
  await toolbox.stop();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
  for (const [name, value] of saved) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
});

function call(name: string, args: Record<string, unknown>) {
  return executeTool(toolbox.tools.get(name)!, args, { signal: new AbortController().signal, authorize: async () => true });
}

/** Where a reminder set now lands, once the clock has passed it. */
async function reminderLandsAt(): Promise<{ chatId: string | undefined; threadId: string | undefined }> {
  await call('remind', { delay: '1m', text: 'ping' });
  await clock.advance(60_000);
  const [run] = deliverer.deliveries.filter((delivery) => delivery.request.kind === 'cron');
  return { chatId: run?.session?.chatId, threadId: run?.session?.threadId };
}

describe('outside the gateway: the THREADLINE_SESSION_* variables', () => {
  it('terminal: the child gets the variables\' session', async () => {
    const { text } = await call('terminal', { command: 'echo "[$THREADLINE_SESSION_CHAT_ID/$THREADLINE_SESSION_THREAD_ID]"' });
    expect(text).toContain('[env-chat/stale-thread]');
  });

  it('terminal in the background: the notification goes to the variables\' chat and thread', async () => {
    const { text } = await call('terminal', { command: 'echo bg', background: true, notify_on_complete: true });
    const id = /\b(p[0-9a-z]+)\b/.exec(text)![1]!;
    const done = await deliverer.waitFor(`proc:${id}:done`);
    expect(done.session).toMatchObject({ chatId: 'env-chat', threadId: 'stale-thread' });
  });

  it('remind: the run goes to the variables\' chat and thread', async () => {
    expect(await reminderLandsAt()).toEqual({ chatId: 'env-chat', threadId: 'stale-thread' });
  });

  it('send_message: sent from the variables\' session, mirrored with the source cli', async () => {
    await call('send_message', { target: 'webhook:other', text: 'from a script' });
    expect(deliverer.deliveries[0]!.request.origin.session).toMatchObject({ chatId: 'env-chat' });
    const mirrored = await store.history.recent('none', { platform: 'webhook', chatId: 'other' }, 5);
    expect(mirrored).toEqual([expect.objectContaining({ text: 'from a script', source: 'cli' })]);
  });

  it('tts: the format follows the variables\' platform', async () => {
    const { attachment } = await call('tts', { text: 'hello' });
    expect(attachment).toMatchObject({ filename: 'voice.ogg', contentType: 'audio/ogg' });
  });

  it('skills: the surface is cli, whatever platform the variables name', async () => {
    mkdirSync(join(dir, 'skills'));
    writeFileSync(join(dir, 'skills', 'shell.md'), '---\ndescription: For scripts\nplatforms: [cli]\n---\nBody.\n');
    writeFileSync(join(dir, 'skills', 'chat.md'), '---\ndescription: For chats\nplatforms: [webhook]\n---\nBody.\n');
    toolbox.skills.reload();
    const { text } = await call('skills', {});
    expect(text).toContain('For scripts');
    expect(text).not.toContain('For chats');
    expect((await withSession(NO_THREAD, () => call('skills', {}))).text).toContain('For chats');
  });

  it('an explicitly empty thread variable means no thread', async () => {
    process.env['THREADLINE_SESSION_THREAD_ID'] = '';
    expect(await reminderLandsAt()).toEqual({ chatId: 'env-chat', threadId: undefined });
    const { text } = await call('terminal', { command: 'echo "[${THREADLINE_SESSION_THREAD_ID-unset}]"' });
    expect(text).toContain('[unset]');
  });
});

describe('inside the gateway: the context\'s session, never the variables', () => {
  it('terminal: a session without a thread gives the child none, not the stale variable', async () => {
    const { text } = await withSession(NO_THREAD, () => call('terminal', { command: 'echo "[$THREADLINE_SESSION_CHAT_ID/${THREADLINE_SESSION_THREAD_ID-unset}]"' }));
    expect(text).toContain('[ctx-chat/unset]');
  });

  it('remind: the run goes to the session\'s chat, with no thread', async () => {
    expect(await withSession(NO_THREAD, () => reminderLandsAt())).toEqual({ chatId: 'ctx-chat', threadId: undefined });
  });

  it('send_message: mirrored with the session\'s platform as its source', async () => {
    await withSession(NO_THREAD, () => call('send_message', { target: 'webhook:other', text: 'from a chat' }));
    const mirrored = await store.history.recent('none', { platform: 'webhook', chatId: 'other' }, 5);
    expect(mirrored).toEqual([expect.objectContaining({ source: 'webhook' })]);
  });

  it('/jobs and /cron list see the session\'s chat, not the variables\'', async () => {
    await call('remind', { delay: '1h', text: 'env job' });
    const listed = await withSession(NO_THREAD, () => call('list_schedules', {}));
    expect(listed.text).not.toContain('env job');
  });
});
