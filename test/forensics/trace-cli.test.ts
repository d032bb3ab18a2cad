/**
 * `threadline trace --chat` end to end, on the trace file a test gateway wrote (see
 * gateway-traces.ts): one conversation's traces, their roots, deliveries and links.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runThreadline } from '../../src/cli/threadline.js';
import type { TraceSummary } from '../../src/forensics/conversation-traces.js';
import { ASKED_THREAD, CI_CHAT, QUIET_CHAT, WRONG_THREAD, buildGatewayTraces, type GatewayTraces } from './gateway-traces.js';

interface TracesReport {
  readonly source: string;
  readonly since: string;
  readonly until: string;
  readonly traces: (TraceSummary & { root: { at: string } })[];
}

async function run(argv: string[], env: NodeJS.ProcessEnv = {}) {
  let out = '';
  let err = '';
  const code = await runThreadline(argv, { out: (text) => void (out += text), err: (text) => void (err += text), env });
  return { code, out, err };
}

async function traces(...args: string[]): Promise<TracesReport> {
  const { code, out, err } = await run(['trace', '--file', fixture.file, '--json', ...args]);
  expect({ code, err }).toEqual({ code: 0, err: '' });
  return JSON.parse(out) as TracesReport;
}

const root = mkdtempSync(join(tmpdir(), 'threadline-trace-cli-'));
let fixture: GatewayTraces;
beforeAll(async () => {
  // A smaller gateway run than misroutes-cli's thousand: the examples need its shapes, not its volume.
  fixture = await buildGatewayTraces(root, { messages: 250 });
}, 60_000);
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('threadline trace --chat', () => {
  it("lists a thread's message turns and its reminder's run, linked to the message that set it", async () => {
    const found = await traces('--chat', QUIET_CHAT, '--thread', 'topic-1');
    const ids = found.traces.map((trace) => trace.traceId);
    expect(ids).toContain(fixture.quietReminder.setTraceId);
    expect(ids).toContain(fixture.quietReminder.runTraceId);
    // Every root is of that thread, and so is every delivery.
    for (const trace of found.traces) {
      expect(trace.root.routing).toEqual({ platform: 'webhook', chatId: QUIET_CHAT, threadId: 'topic-1' });
      for (const delivery of trace.deliveries) expect(delivery.destination).toEqual({ platform: 'webhook', chatId: QUIET_CHAT, threadId: 'topic-1' });
    }
    const set = found.traces.find((trace) => trace.traceId === fixture.quietReminder.setTraceId)!;
    expect(set.root).toMatchObject({ name: 'gateway.message', kind: 'turn', status: 'unset' });
    expect(set.deliveries).toEqual([expect.objectContaining({ kind: 'reply', target: 'origin', outcome: 'sent', mismatch: false })]);
    const run = found.traces.find((trace) => trace.traceId === fixture.quietReminder.runTraceId)!;
    expect(run.root).toMatchObject({ name: 'cron.run', kind: 'cron run' });
    expect(run.links.map((link) => link.traceId)).toEqual([fixture.quietReminder.setTraceId]);
    expect(run.deliveries).toEqual([expect.objectContaining({ kind: 'cron', outcome: 'sent', mismatch: false })]);
    // Newest first, times as ISO text.
    const times = found.traces.map((trace) => Date.parse(trace.root.at));
    expect(times).toEqual([...times].sort((a, b) => b - a));
    expect(found.traces[0]!.root.at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });

  it('--thread narrows: the whole chat holds other threads too', async () => {
    const chat = await traces('--chat', QUIET_CHAT);
    const thread = await traces('--chat', QUIET_CHAT, '--thread', 'topic-1');
    const threads = new Set(chat.traces.map((trace) => trace.root.routing?.threadId));
    expect(threads.size).toBeGreaterThan(2);
    expect(chat.traces.length).toBeGreaterThan(thread.traces.length);
    expect(thread.traces.every((trace) => chat.traces.some((other) => other.traceId === trace.traceId))).toBe(true);
  });

  it("shows the misrouted reply under the asking thread's turn, marked, with where it went", async () => {
    const { code, out, err } = await run(['trace', '--file', fixture.file, '--chat', CI_CHAT, '--thread', ASKED_THREAD]);
    expect({ code, err }).toEqual({ code: 0, err: '' });
    const block = out.split('\n\n').find((each) => each.includes(fixture.misroute.traceId))!;
    expect(block.split('\n')).toEqual([
      expect.stringMatching(/^gateway\.message {2}turn {2}\S+Z {2}\d+ ms {2}ok {2}3 spans$/),
      `  trace        ${fixture.misroute.traceId}`,
      `  routing      webhook chat ${CI_CHAT} thread ${ASKED_THREAD}`,
      `  delivery     reply ${fixture.misroute.deliveryId} to webhook chat ${CI_CHAT} thread ${WRONG_THREAD} (origin)  sent  MISROUTE origin webhook chat ${CI_CHAT} thread ${ASKED_THREAD}`,
    ]);
    expect(out.trimEnd().split('\n').at(-1)).toMatch(new RegExp(`^1 trace from trace file ${fixture.file}, \\S+Z to \\S+Z$`));
  });

  it("lists a chat's watched commands' notifications as watcher traces linked to their /run", async () => {
    const found = await traces('--chat', CI_CHAT);
    const watchers = found.traces.filter((trace) => trace.root.kind === 'watcher');
    expect(watchers.map((trace) => trace.root.routing?.threadId).sort()).toEqual(['build-1', 'build-2', 'build-3']);
    for (const watcher of watchers) {
      expect(watcher.root.name).toBe('terminal.notify');
      expect(watcher.deliveries).toEqual([expect.objectContaining({ kind: 'notification', outcome: 'sent' })]);
      const started = found.traces.find((trace) => trace.traceId === watcher.links[0]!.traceId);
      expect(started?.root).toMatchObject({ name: 'gateway.message', routing: watcher.root.routing });
    }
    // The turn the strict gateway refused to misroute: its reply failed, the apology went out.
    const refused = found.traces.find((trace) => trace.traceId === fixture.refused.traceId)!;
    expect(refused.root.status).toBe('error');
    expect(refused.deliveries.map((delivery) => [delivery.id, delivery.outcome, delivery.mismatch])).toEqual([
      [fixture.refused.deliveryId, 'failed', true],
      [expect.any(String), 'sent', false],
    ]);
  });

  it('none found: exit 0 and one clear line', async () => {
    const { code, out, err } = await run(['trace', '--file', fixture.file, '--chat', 'nobody-here']);
    expect({ code, err }).toEqual({ code: 0, err: '' });
    expect(out).toMatch(new RegExp(`^0 traces from trace file ${fixture.file}, \\S+Z to \\S+Z\\n$`));
  });

  it('--chat is required', async () => {
    const { code, err } = await run(['trace', '--file', fixture.file]);
    expect(code).toBe(2);
    expect(err).toMatch(/--chat/);
  });
});
