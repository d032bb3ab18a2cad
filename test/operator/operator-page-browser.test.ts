/**
 * The operator's page in a real browser: Debian's Chromium driven by playwright-core, one
 * launch for the file. Chromium missing is a failure, never a skip: `.ci/run` installs it.
 */
import { existsSync } from 'node:fs';
import { inflateSync } from 'node:zlib';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Agent, Turn } from '../../src/agent/agent.js';
import { operatorPageUrl, startTestGateway, type TestGateway } from '../../src/testing/index.js';
import { until } from '../helpers/gateway.js';

const CHROMIUM = '/usr/bin/chromium';
const TOKEN = 'browser-admin-token-0123456789abcdef';
const TRACE_UI = 'http://traces.invalid/trace/{traceId}';
const HOSTILE_NAME = '<img src=x onerror="window.__xss=1">';

/** Answers every message at once, but holds a message saying `hold` until released: a turn running now. */
class HoldingAgent implements Agent {
  readonly held: Turn[] = [];
  private release: () => void = () => {};
  private readonly released = new Promise<void>((resolve) => (this.release = resolve));

  async handle(turn: Turn): Promise<void> {
    if (turn.text === 'hold') {
      this.held.push(turn);
      await Promise.race([this.released, new Promise((resolve) => turn.signal.addEventListener('abort', resolve))]);
    }
    await turn.reply(`answer: ${turn.text}`);
  }

  releaseAll(): void {
    this.release();
  }
}

// At load, not in a hook: the file fails as a whole, with no test reported as skipped.
if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install Debian's chromium (apt-get install chromium), as .ci/run does`);

let browser: Browser;
let g: TestGateway;
const agent = new HoldingAgent();

beforeAll(async () => {
  // Root in CI: Chromium's sandbox needs user namespaces a container may not give.
  [browser, g] = await Promise.all([
    chromium.launch({ executablePath: CHROMIUM, chromiumSandbox: false, args: ['--headless=new'] }),
    startTestGateway({ agent, env: { THREADLINE_ADMIN_TOKEN: TOKEN, THREADLINE_TRACE_UI_URL: TRACE_UI, THREADLINE_TERMINAL: '1' } }),
  ]);
});

afterAll(async () => {
  agent.releaseAll();
  await Promise.all([browser?.close(), g?.stop()]);
});

/** The page after logging in through its form, as a person would. */
async function loggedIn(): Promise<Page> {
  const page = await browser.newPage();
  const first = await page.goto(operatorPageUrl(g));
  expect(first?.status()).toBe(401);
  await page.fill('input[name=token]', TOKEN);
  await Promise.all([page.waitForURL(operatorPageUrl(g)), page.click('button[type=submit]')]);
  return page;
}

async function metric(page: Page, name: string): Promise<string> {
  return (await page.textContent(`[data-metric="${name}"]`))?.trim() ?? '';
}

/** Every pixel of a PNG (8-bit RGB or RGBA, not interlaced), as [r, g, b] triples. */
function pixelsOf(png: Buffer): { width: number; height: number; pixels: [number, number, number][] } {
  let offset = 8;
  let width = 0;
  let height = 0;
  let channels = 0;
  const data: Buffer[] = [];
  while (offset < png.length) {
    const length = png.readUInt32BE(offset);
    const type = png.toString('latin1', offset + 4, offset + 8);
    const body = png.subarray(offset + 8, offset + 8 + length);
    if (type === 'IHDR') {
      width = body.readUInt32BE(0);
      height = body.readUInt32BE(4);
      expect(body[8], 'bit depth').toBe(8);
      channels = body[9] === 6 ? 4 : body[9] === 2 ? 3 : 0;
      expect(channels, 'colour type RGB or RGBA').toBeGreaterThan(0);
    }
    if (type === 'IDAT') data.push(body);
    offset += 12 + length;
  }
  const raw = inflateSync(Buffer.concat(data));
  const stride = width * channels;
  const rows: Buffer[] = [];
  let previous = Buffer.alloc(stride);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)]!;
    const line = Buffer.from(raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1)));
    for (let x = 0; x < stride; x++) {
      const left = x >= channels ? line[x - channels]! : 0;
      const up = previous[x]!;
      const upLeft = x >= channels ? previous[x - channels]! : 0;
      const paeth = () => {
        const p = left + up - upLeft;
        const [a, b, c] = [Math.abs(p - left), Math.abs(p - up), Math.abs(p - upLeft)];
        return a <= b && a <= c ? left : b <= c ? up : upLeft;
      };
      const predictor = [0, left, up, (left + up) >> 1, paeth()][filter]!;
      line[x] = (line[x]! + predictor) & 0xff;
    }
    rows.push(line);
    previous = line;
  }
  const pixels = rows.flatMap((line) => Array.from({ length: width }, (_, x) => [line[x * channels]!, line[x * channels + 1]!, line[x * channels + 2]!] as [number, number, number]));
  return { width, height, pixels };
}

describe('the operator page in Chromium', () => {
  it('shows the numbers the store holds after a scripted load, with trace links, and a hostile chat name inert', async () => {
    // A dead letter: the receiver refuses its one reply for good.
    g.receiver.failNext(1, 400);
    expect((await g.send({ chat_id: 'dead', text: 'lost' })).status).toBe(202);
    await until(async () => (await g.deliveries({ failedOnly: true })).length === 1);
    for (let i = 0; i < 6; i++) expect((await g.send({ chat_id: `chat-${i % 3}`, text: `m${i}` })).status).toBe(202);
    await g.receiver.waitFor(6);
    // A turn running now, in a chat whose name is an XSS attempt.
    expect((await g.send({ chat_id: 'busy', chat_name: HOSTILE_NAME, text: 'hold' })).status).toBe(202);
    await until(() => agent.held.length === 1);
    const session = { platform: 'webhook', chatId: 'ops', chatType: 'dm' } as const;
    await g.runTool('remind', { text: 'stand-up', delay: '1h' }, session);
    await g.runTool('terminal', { command: 'sleep 20', background: true }, session);

    const page = await loggedIn();
    const dialogs: string[] = [];
    page.on('dialog', (dialog) => void dialog.dismiss().then(() => dialogs.push(dialog.message())));
    const { store, gateway } = g.running;
    const failed = await g.deliveries({ failedOnly: true });
    const running = (await store.processes.all()).filter((record) => record.exit === undefined);
    expect(await metric(page, 'dead-letters')).toBe(String(failed.length));
    expect(await metric(page, 'outbox-open')).toBe(String((await store.outbox.pressure(1_000)).open));
    expect(await metric(page, 'queued')).toBe(String(gateway.queued));
    expect(await metric(page, 'live-turns')).toBe('1');
    expect(await metric(page, 'delivered')).toBe(String(g.receiver.unique().size));
    expect(await metric(page, 'failed')).toBe('1');
    expect(await metric(page, 'schedules')).toBe(String((await store.schedules.all()).length));
    expect(await metric(page, 'commands')).toBe(String(running.length));
    expect(running).toHaveLength(1);
    expect(await page.locator('#dead-letters tbody tr').count()).toBe(failed.length);
    expect(await page.locator('#schedules tbody tr').textContent()).toContain('stand-up');
    expect(await page.locator('#commands tbody tr').textContent()).toContain('sleep 20');

    // The live turn links into the trace UI, and its hostile chat name is text.
    const liveTurn = page.locator('#live-turns tbody tr');
    expect(await liveTurn.textContent()).toContain(HOSTILE_NAME);
    expect(await liveTurn.locator('a').getAttribute('href')).toBe(TRACE_UI.replace('{traceId}', agent.held[0]!.traceId));
    expect(await page.locator('#live-turns img').count()).toBe(0);
    expect(await page.evaluate(() => (globalThis as unknown as { __xss?: number }).__xss)).toBeUndefined();
    expect(dialogs).toEqual([]);
    await page.close();
  });

  it('sends a dead letter again when its Retry button is clicked, without JavaScript', async () => {
    const [dead] = await g.deliveries({ failedOnly: true });
    const before = g.receiver.unique().size;
    const context = await browser.newContext({ javaScriptEnabled: false });
    const page = await context.newPage();
    await page.goto(operatorPageUrl(g));
    await page.fill('input[name=token]', TOKEN);
    await Promise.all([page.waitForURL(operatorPageUrl(g)), page.click('button[type=submit]')]);
    await Promise.all([page.waitForURL(/retried=queued/), page.click(`button[data-retry="${dead!.id}"]`)]);
    expect(await page.textContent('[role=status]')).toContain('Queued the dead letter');
    const delivered = await g.receiver.waitFor(before + 1);
    expect(delivered.map((received) => received.body.text)).toContain('answer: lost');
    expect(await g.deliveries({ failedOnly: true })).toEqual([]);
    await context.close();
  });

  it('draws the last hour’s deliveries: the chart’s screenshot is not blank and its latency line has points', async () => {
    const page = await loggedIn();
    const chart = page.locator('#delivery-chart');
    const box = await chart.boundingBox();
    expect(box?.width).toBeGreaterThan(300);
    expect(box?.height).toBeGreaterThan(100);
    expect(Number(await page.getAttribute('path[data-series=latency]', 'data-points'))).toBeGreaterThanOrEqual(1);
    expect(await page.locator('g[data-series=throughput] rect').count()).toBeGreaterThanOrEqual(1);
    const { width, height, pixels } = pixelsOf(await chart.screenshot({ type: 'png' }));
    expect(width * height).toBe(pixels.length);
    const colours = new Set(pixels.map(([r, g2, b]) => (r << 16) | (g2 << 8) | b));
    expect(colours.size).toBeGreaterThan(3);
    // The bars' blue and the latency line's red are drawn, not only the white ground.
    const near = ([r, g2, b]: [number, number, number], [R, G, B]: [number, number, number]) => Math.abs(r - R) + Math.abs(g2 - G) + Math.abs(b - B) < 60;
    expect(pixels.filter((pixel) => near(pixel, [0x8f, 0xb8, 0xde])).length).toBeGreaterThan(20);
    expect(pixels.filter((pixel) => near(pixel, [0xc0, 0x39, 0x2b])).length).toBeGreaterThan(5);
    await page.close();
  });

  it('shows neither the page nor takes an action for a browser without the token', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    const answer = await page.goto(operatorPageUrl(g));
    expect(answer?.status()).toBe(401);
    expect(await page.locator('[data-metric]').count()).toBe(0);
    const posted = await page.request.post(`${g.url}/v1/admin/dead-letters/retry`, { form: { id: 'x', csrf: 'y' }, maxRedirects: 0 });
    expect(posted.status()).toBe(401);
    await context.close();
  });
});
