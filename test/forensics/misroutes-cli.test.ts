/**
 * `threadline misroutes` end to end, on traces the gateway wrote itself (see gateway-traces.ts):
 * the trace file with its rotated files, the same lines in a fake Jaeger (api_v3 and the UI API)
 * and a fake Tempo, the store for lost work, a gateway process under hmac privacy, and the
 * ways a trace store or the command line can be wrong.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runThreadline } from '../../src/cli/threadline.js';
import type { LostWork, Misroute } from '../../src/forensics/findings.js';
import { pseudonymize } from '../../src/telemetry/index.js';
import { DeliveryReceiver } from '../../src/testing/index.js';
import { startFakeJaeger } from '../helpers/fake-jaeger.js';
import { startFakeTempo } from '../helpers/fake-tempo.js';
import { startFakeServer, type FakeFailure, type FakeServer } from '../helpers/fake-trace-store.js';
import { until } from '../helpers/gateway.js';
import { isolatedEnv, runGatewayProcess } from '../helpers/gateway-process.js';
import { ANNOUNCE_CHAT, ASKED_THREAD, CI_CHAT, HOME_CHAT, LOST_CHAT, QUIET_CHAT, REFUSED_THREAD, WRONG_THREAD, buildGatewayTraces, type GatewayTraces } from './gateway-traces.js';

interface Report {
  readonly traces: number;
  readonly misroutes: Misroute[];
  readonly lost: LostWork[];
}

async function run(argv: string[], env: NodeJS.ProcessEnv = {}) {
  let out = '';
  let err = '';
  const code = await runThreadline(argv, { out: (text) => void (out += text), err: (text) => void (err += text), env });
  return { code, out, err };
}

/** `misroutes --json` with every trace of the fixture in reach and lost work judged at once. */
async function report(source: string[], extra: string[] = [], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; report: Report; err: string }> {
  const { code, out, err } = await run(['misroutes', ...source, '--json', '--lost-after', '1ms', '--limit', '10000', ...extra], env);
  expect(err).toBe('');
  return { code, report: JSON.parse(out) as Report, err };
}

/** What every source must agree on, without the times each renders its own way. */
function essentials(found: Report) {
  return {
    misroutes: found.misroutes.map((m) => ({
      deliveryId: m.deliveryId,
      origin: m.origin,
      destination: m.destination,
      outcome: m.outcome,
      detectedBy: m.detectedBy,
      divergedAt: { name: m.divergedAt.name, spanId: m.divergedAt.spanId, routing: m.divergedAt.routing },
      work: m.work === undefined ? undefined : { kind: m.work.kind, name: m.work.name, traceId: m.work.traceId },
    })),
    lost: found.lost.map((l) => ({ id: l.id, what: l.what, state: l.state, origin: l.origin, destination: l.destination, originTraceId: l.originTraceId })),
  };
}

const root = mkdtempSync(join(tmpdir(), 'threadline-misroutes-cli-'));

const KEY = 'misroutes-cli-hmac-key-0123456789';
const TOKEN = 'misroutes-cli-token';
const CHAT = 'team:ops room-4711';
const THREAD = 'topic:9123';
const HMAC = { THREADLINE_SPAN_PRIVACY: 'hmac', THREADLINE_SPAN_HMAC_KEY: KEY };

/**
 * A gateway process under hmac privacy whose second reply is refused for good (a dead letter);
 * returns its data dir. Run beside the fixture's gateway: it is a process of its own.
 */
async function runHmacGateway(): Promise<string> {
  const dataDir = join(root, 'hmac-data');
  const receiver = await DeliveryReceiver.start();
  try {
    const env = isolatedEnv({ THREADLINE_DATA_DIR: dataDir, ...HMAC, THREADLINE_WEBHOOK_TOKEN: TOKEN, THREADLINE_WEBHOOK_DELIVERY_URL: receiver.url });
    const { code, output } = await runGatewayProcess(env, async (base) => {
      const say = (text: string) =>
        fetch(`${base}/v1/messages`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
          body: JSON.stringify({ chat_id: CHAT, thread_id: THREAD, chat_type: 'group', text }),
        });
      expect((await say('hello')).status).toBe(202);
      await receiver.waitFor(1);
      receiver.failNext(1, 400);
      expect((await say('again')).status).toBe(202);
      await until(() => receiver.attempts >= 2);
    });
    expect(code, output).toBe(0);
    return dataDir;
  } finally {
    await receiver.close();
  }
}

let fixture: GatewayTraces;
let hmacGateway: Promise<string>;
beforeAll(async () => {
  hmacGateway = runHmacGateway();
  // Handled here too, so a failure shows once, in the hmac tests, not as an unhandled rejection.
  hmacGateway.catch(() => {});
  fixture = await buildGatewayTraces(root);
}, 60_000);
afterAll(() => rmSync(root, { recursive: true, force: true }));

const ci = (threadId: string) => ({ platform: 'webhook', chatId: CI_CHAT, threadId });
const fileSource = () => ['--file', fixture.file];

describe('threadline misroutes on the trace file', () => {
  it('finds exactly the injected misroutes and the lost reminder among a thousand good deliveries, and exits 1', async () => {
    expect(fixture.files.length).toBeGreaterThan(1);
    expect(fixture.goodDeliveries).toBeGreaterThanOrEqual(1_000);
    const { code, report: found } = await report(fileSource(), ['--no-store']);
    expect(code).toBe(1);
    expect(found.traces).toBeGreaterThanOrEqual(1_000);
    expect(found.misroutes.map((m) => m.deliveryId).sort()).toEqual([fixture.misroute.deliveryId, fixture.refused.deliveryId].sort());

    const sent = found.misroutes.find((m) => m.deliveryId === fixture.misroute.deliveryId)!;
    expect(sent).toMatchObject({
      deliveryKind: 'reply',
      origin: ci(ASKED_THREAD),
      destination: ci(WRONG_THREAD),
      outcome: 'sent',
      detectedBy: 'guard',
      delivery: { traceId: fixture.misroute.traceId, name: 'gateway.deliver' },
      // The turn ran in its own thread; the delivery span is the first stamped with the other one.
      divergedAt: { traceId: fixture.misroute.traceId, name: 'gateway.deliver', routing: ci(WRONG_THREAD) },
      work: { kind: 'turn', name: 'gateway.message', traceId: fixture.misroute.traceId, routing: ci(ASKED_THREAD) },
    });
    const refused = found.misroutes.find((m) => m.deliveryId === fixture.refused.deliveryId)!;
    expect(refused).toMatchObject({ origin: ci(REFUSED_THREAD), destination: ci(WRONG_THREAD), outcome: 'refused', work: { kind: 'turn', traceId: fixture.refused.traceId } });

    expect(found.lost).toEqual([
      expect.objectContaining({
        what: 'cron run',
        id: fixture.lost.deliveryId,
        kind: 'cron',
        state: 'not sent',
        origin: { platform: 'webhook', chatId: LOST_CHAT },
        destination: { platform: 'webhook', chatId: LOST_CHAT },
        // The work that produced it: the run, a trace of its own linked to the message that set the reminder.
        originTraceId: fixture.lost.runTraceId,
        lastError: expect.stringContaining('answered 400'),
        source: 'traces',
      }),
    ]);
  });

  it('names both routings, the outcome, where it diverged, the work and the trace in text', async () => {
    const { code, out } = await run(['misroutes', ...fileSource(), '--no-store', '--chat', CI_CHAT, '--thread', ASKED_THREAD]);
    expect(code).toBe(1);
    const block = out.split('\n\n')[0]!.split('\n');
    expect(block[0]).toMatch(new RegExp(`^MISROUTE  reply ${fixture.misroute.deliveryId.replace('/', '\\/')}  sent to another thread  \\(flagged by the misroute guard, \\d{4}-`));
    expect(block.slice(1).map((line) => line.replace(/ at \S+Z/, ' at <time>').replace(/span [0-9a-f]{16}/, 'span <id>'))).toEqual([
      `  origin       webhook chat ${CI_CHAT} thread ${ASKED_THREAD}`,
      `  destination  webhook chat ${CI_CHAT} thread ${WRONG_THREAD}`,
      `  diverged at  gateway.deliver at <time> [webhook chat ${CI_CHAT} thread ${WRONG_THREAD}]  span <id>`,
      `  work         turn: gateway.message at <time> [webhook chat ${CI_CHAT} thread ${ASKED_THREAD}]  span <id>`,
      `  trace        ${fixture.misroute.traceId}`,
    ]);
    expect(out.trimEnd().split('\n').at(-1)).toMatch(new RegExp(`^1 misroute, 0 lost: \\d+ traces? from trace file ${fixture.file}`));
  });

  it('exits 0 with a clear line for a chat that had no problem', async () => {
    const { code, out, err } = await run(['misroutes', ...fileSource(), '--no-store', '--lost-after', '1ms', '--chat', QUIET_CHAT]);
    expect({ code, err }).toEqual({ code: 0, err: '' });
    expect(out).toMatch(/^no misroutes, nothing lost: \d+ traces? from trace file /);
  });

  it('reports the dead letter once, from the store, with its last error', async () => {
    const { code, report: found } = await report(fileSource(), ['--data-dir', fixture.dataDir]);
    expect(code).toBe(1);
    expect(found.lost).toEqual([
      expect.objectContaining({ id: fixture.lost.deliveryId, what: 'cron run', state: 'failed', attempts: 1, lastError: fixture.lost.lastError, source: 'store' }),
    ]);
    expect(found.misroutes).toHaveLength(2);
  });

  it('finds a misroute whose guard event is gone, from the trace alone, and never flags home or explicit deliveries', async () => {
    // A gateway without the guard (or a collector that dropped events) leaves only the routing.
    const stripped = join(root, 'stripped.jsonl');
    let removed = 0;
    const lines = readAllLines(fixture.files).map((line) =>
      line.replace(/"events":\[\{"attributes":\[[^\]]*\],"name":"routing\.mismatch"[^}]*\}\]/g, (event) => {
        if (!event.includes(`"${CI_CHAT}"`) || !event.includes(`"${ASKED_THREAD}"`)) return event;
        removed++;
        return '"events":[]';
      }),
    );
    expect(removed).toBe(1);
    writeFileSync(stripped, lines.join('\n') + '\n');
    const { code, report: found } = await report(['--file', stripped], ['--no-store']);
    expect(code).toBe(1);
    expect(found.misroutes.find((m) => m.deliveryId === fixture.misroute.deliveryId)).toMatchObject({
      origin: ci(ASKED_THREAD),
      destination: ci(WRONG_THREAD),
      outcome: 'sent',
      detectedBy: 'trace',
    });

    // Each of these went to another chat than its work's, as asked: a naive origin ≠ destination check would flag them.
    const elsewhere = readAllLines(fixture.files)
      .flatMap((line) => [...line.matchAll(/"key":"delivery\.id","value":\{"stringValue":"([^"]+)"\}/g)].map((match) => match[1]!))
      .filter((id) => fixture.elsewhere.includes(id));
    expect(new Set(elsewhere).size).toBe(fixture.elsewhere.length);
    const destinations = readAllLines(fixture.files).join('\n');
    for (const chat of [HOME_CHAT, ANNOUNCE_CHAT]) expect(destinations).toContain(`"key":"routing.destination.chat.id","value":{"stringValue":"${chat}"}`);
    expect(fixture.elsewhere.filter((id) => id.startsWith('cron:')).length).toBe(3);
    expect(fixture.elsewhere.filter((id) => id.startsWith('send:')).length).toBe(2);
    const flagged = new Set([...found.misroutes.map((m) => m.deliveryId), ...found.lost.map((l) => l.id)]);
    expect(fixture.elsewhere.filter((id) => flagged.has(id))).toEqual([]);
  });
});

describe('threadline misroutes on Jaeger and Tempo', () => {
  let reference: ReturnType<typeof essentials>;
  beforeAll(async () => {
    reference = essentials((await report(fileSource(), ['--no-store'])).report);
  });

  it.each([
    ['Jaeger v2 (api_v3)', 'v3'],
    ['Jaeger without api_v3 (the UI API)', 'v1'],
  ] as const)('%s fed with the same lines finds the same', async (_name, mode) => {
    const jaeger = await startFakeJaeger({ mode });
    try {
      for (const line of fixture.lines) jaeger.traces.add(line);
      const { code, report: found } = await report(['--jaeger', jaeger.url], ['--no-store']);
      expect(code).toBe(1);
      expect(essentials(found)).toEqual(reference);
      expect((found.misroutes[0] as Misroute & { link?: string }).link).toMatch(new RegExp(`^${jaeger.url}/trace/[0-9a-f]{32}$`));
    } finally {
      await jaeger.close();
    }
  });

  it('Tempo fed with the same lines finds the same', async () => {
    const tempo = await startFakeTempo();
    try {
      for (const line of fixture.lines) tempo.traces.add(line);
      const { code, report: found } = await report(['--tempo', tempo.url], ['--no-store']);
      expect(code).toBe(1);
      expect(essentials(found)).toEqual(reference);
    } finally {
      await tempo.close();
    }
  });
});

describe('a trace store that cannot be read: one clear line, exit 2', () => {
  const failures: [FakeFailure, RegExp][] = [
    ['refuse', /refused|connect|reach/i],
    ['status-500', /500/],
    // An empty answer to Jaeger's first request is a server that is not Jaeger's query service.
    ['empty', /empty body|answered as Jaeger does/],
    ['malformed', /JSON|malformed|not/i],
  ];
  for (const [flag, start] of [
    ['--jaeger', (): Promise<FakeServer> => startFakeJaeger({ mode: 'v3' })],
    ['--tempo', (): Promise<FakeServer> => startFakeTempo()],
  ] as const) {
    it.each(failures)(`${flag}: %s`, async (failure, says) => {
      const server = await start();
      try {
        await server.fail(failure);
        const { code, out, err } = await run(['misroutes', flag, server.url, '--no-store']);
        expect(code).toBe(2);
        expect(out).toBe('');
        expect(err.trimEnd().split('\n')).toHaveLength(1);
        expect(err).toMatch(/^threadline: .*\[TL_TRACE_SOURCE\]\n$/);
        expect(err).toMatch(flag === '--jaeger' ? /^threadline: jaeger http:/ : /^threadline: tempo http:/);
        expect(err).toContain('127.0.0.1');
        expect(err).toMatch(says);
      } finally {
        await server.close();
      }
    });
  }

  it('a URL with a password is never echoed', async () => {
    const server = await startFakeServer(() => ({ status: 500, body: 'down\n' }));
    try {
      const { code, err } = await run(['misroutes', '--jaeger', server.url.replace('http://', 'http://admin:s3cret-pw@'), '--no-store']);
      expect(code).toBe(2);
      expect(err).not.toContain('s3cret-pw');
    } finally {
      await server.close();
    }
  });

  it('a missing trace file and a file that is not traces', async () => {
    const missing = await run(['misroutes', '--file', join(root, 'nowhere.jsonl'), '--no-store']);
    expect(missing.code).toBe(2);
    expect(missing.err).toMatch(/^threadline: there is no trace file at .*nowhere\.jsonl.*\[TL_TRACE_SOURCE\]\n$/);
    const notTraces = join(root, 'not-traces.jsonl');
    writeFileSync(notTraces, '{"hello": "world"}\nnot json\n');
    const bad = await run(['misroutes', '--file', notTraces, '--no-store']);
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(/not-traces\.jsonl line \d+ is not an OTLP\/JSON batch of spans.*\[TL_TRACE_SOURCE\]\n$/);
  });
});

describe('usage errors exit 2', () => {
  it.each([
    ['two sources', ['--jaeger', 'http://127.0.0.1:1', '--tempo', 'http://127.0.0.1:2'], {}, /--jaeger and --tempo/],
    ['--thread without --chat', ['--thread', 't'], {}, /--thread needs --chat/],
    ['a bad duration', ['--since', 'yesterday'], {}, /90s, 30m, 1h or 2d/],
    ['a zero --lost-after', ['--lost-after', '0s'], {}, /90s, 30m, 1h or 2d/],
    ['--chat with off privacy', ['--chat', 'c'], { THREADLINE_SPAN_PRIVACY: 'off' }, /spans carry no chat or thread ids/],
    ['hmac privacy without its key', ['--chat', 'c'], { THREADLINE_SPAN_PRIVACY: 'hmac' }, /THREADLINE_SPAN_HMAC_KEY/],
    ['a --jaeger that is no URL', ['--jaeger', 'localhost:16686'], {}, /--jaeger takes an http/],
  ] as const)('%s', async (_name, args, env, says) => {
    const source = args.some((arg) => arg === '--jaeger' || arg === '--tempo') ? [] : ['--file', fixture.file];
    const { code, out, err } = await run(['misroutes', ...source, '--no-store', ...args], env);
    expect(code).toBe(2);
    expect(out).toBe('');
    expect(err).toMatch(says);
  });
});

describe('hmac privacy, as npm start runs the gateway', () => {
  let dataDir: string;

  beforeAll(async () => {
    dataDir = await hmacGateway;
  }, 60_000);

  it('the real chat id, hashed with the same key, finds the lost reply; without the key nothing matches', async () => {
    const file = join(dataDir, 'traces.jsonl');
    expect(readFileSync(file, 'utf8')).not.toContain(THREAD);
    const hashed = await report(['--file', file], ['--no-store', '--chat', CHAT, '--thread', THREAD], HMAC);
    expect(hashed.code).toBe(1);
    expect(hashed.report.lost).toEqual([
      expect.objectContaining({ what: 'delivery', kind: 'reply', destination: { platform: 'webhook', chatId: pseudonymize(CHAT, KEY), threadId: pseudonymize(THREAD, KEY) } }),
    ]);
    const plain = await run(['misroutes', '--file', file, '--no-store', '--lost-after', '1ms', '--chat', CHAT]);
    expect(plain.code).toBe(0);
    const store = await report(['--file', file], ['--data-dir', dataDir, '--chat', CHAT], HMAC);
    expect(store.code).toBe(1);
    // The store holds the real ids: the same delivery, reported once.
    expect(store.report.lost).toEqual([expect.objectContaining({ id: hashed.report.lost[0]!.id, state: 'failed', source: 'store', destination: { platform: 'webhook', chatId: CHAT, threadId: THREAD } })]);
  });
});

/** Every line of the fixture's files, oldest first. */
function readAllLines(files: readonly string[]): string[] {
  return [...files].reverse().flatMap((path) => readFileSync(path, 'utf8').split('\n').filter((line) => line !== ''));
}
