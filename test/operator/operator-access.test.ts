import { describe, expect, it } from 'vitest';
import { readGatewayConfig } from '../../src/gateway/gateway-config.js';
import type { TestGateway } from '../../src/testing/index.js';
import { until, useTestGateways } from '../helpers/gateway.js';

const start = useTestGateways();
const TOKEN = 'operator-admin-token-0123456789abcdef';
const PAGE = '/v1/admin';
const RETRY = '/v1/admin/dead-letters/retry';

type Json = Record<string, unknown>;

function form(fields: Record<string, string>): string {
  return new URLSearchParams(fields).toString();
}

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

/** The CSRF field of the page's first form, as a browser would post it back. */
function csrfOf(page: string): string {
  const match = /name="csrf" value="([^"]+)"/.exec(page);
  expect(match, 'a form with its CSRF field').not.toBeNull();
  return match![1]!;
}

/** A gateway holding one dead letter: its receiver refused the reply for good. */
async function withDeadLetter(env: Record<string, string> = {}): Promise<{ g: TestGateway; id: string }> {
  const g = await start({ env });
  g.receiver.failNext(1, 400);
  expect((await g.send({ chat_id: 'dead', text: 'lost reply' })).status).toBe(202);
  await until(async () => (await g.deliveries({ failedOnly: true })).length === 1);
  const [dead] = await g.deliveries({ failedOnly: true });
  return { g, id: dead!.id };
}

describe('the operator page without THREADLINE_ADMIN_TOKEN', () => {
  it('answers a loopback client at a loopback host name', async () => {
    const g = await start();
    const answer = await fetch(`${g.url}${PAGE}`);
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toMatch(/^text\/html/);
    expect(answer.headers.get('x-frame-options')).toBe('DENY');
    expect(answer.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    expect(await answer.text()).toContain('data-metric="outbox-open"');
  });

  it('refuses with 403 and a JSON reason a client off loopback, one through a proxy, and a rebound host name', async () => {
    const g = await start();
    const server = g.running.server;
    const offLoopback = await server.inject({ method: 'GET', url: PAGE, remoteAddress: '203.0.113.7' });
    const proxied = await fetch(`${g.url}${PAGE}`, { headers: { 'x-forwarded-for': '203.0.113.7' } });
    const rebound = await server.inject({ method: 'GET', url: PAGE, remoteAddress: '127.0.0.1', headers: { host: 'attacker.example:8787' } });
    for (const answer of [
      { status: offLoopback.statusCode, body: offLoopback.json<Json>(), text: offLoopback.body },
      { status: proxied.status, ...(await proxied.text().then((text) => ({ text, body: JSON.parse(text) as Json }))) },
      { status: rebound.statusCode, body: rebound.json<Json>(), text: rebound.body },
    ]) {
      expect(answer.status).toBe(403);
      expect(answer.body).toMatchObject({ code: 'TL_FORBIDDEN', error: expect.stringContaining('THREADLINE_ADMIN_TOKEN') });
      expect(answer.text).not.toContain('data-metric');
    }
  });

  it('refuses a retry posted without the CSRF field, from another origin or another site, and takes it with them', async () => {
    const { g, id } = await withDeadLetter();
    const csrf = csrfOf(await (await fetch(`${g.url}${PAGE}`)).text());
    const post = (fields: Record<string, string>, headers: Record<string, string> = {}) =>
      fetch(`${g.url}${RETRY}`, { method: 'POST', redirect: 'manual', headers: { ...FORM, ...headers }, body: form(fields) });

    for (const refused of [
      await post({ id }),
      await post({ id, csrf: `${csrf}x` }),
      await post({ id, csrf }, { origin: 'http://attacker.example' }),
      await post({ id, csrf }, { 'sec-fetch-site': 'cross-site' }),
    ]) {
      expect(refused.status).toBe(403);
      expect(await refused.json()).toMatchObject({ code: 'TL_FORBIDDEN' });
    }
    expect(g.receiver.unique().size).toBe(0);
    const taken = await post({ id, csrf }, { origin: new URL(g.url).origin, 'sec-fetch-site': 'same-origin' });
    expect(taken.status).toBe(303);
    expect(taken.headers.get('location')).toBe(`${PAGE}?retried=queued`);
    const [delivered] = await g.receiver.waitFor(1);
    expect(delivered!.body.text).toBe('lost reply');
  });

  it('answers a retry of an id that is no dead letter with a notice, and one without an id with 400', async () => {
    const { g, id } = await withDeadLetter();
    const csrf = csrfOf(await (await fetch(`${g.url}${PAGE}`)).text());
    const post = (fields: Record<string, string>) => fetch(`${g.url}${RETRY}`, { method: 'POST', redirect: 'manual', headers: FORM, body: form(fields) });
    expect((await post({ id, csrf })).headers.get('location')).toBe(`${PAGE}?retried=queued`);
    await g.receiver.waitFor(1);
    const again = await post({ id, csrf });
    expect(again.status).toBe(303);
    expect(again.headers.get('location')).toBe(`${PAGE}?retried=none`);
    expect(await (await fetch(`${g.url}${again.headers.get('location')!}`)).text()).toContain('no longer a dead letter');
    const missing = await post({ csrf });
    expect(missing.status).toBe(400);
    expect(await missing.json()).toMatchObject({ code: 'TL_BAD_REQUEST' });
  });
});

describe('the operator page with THREADLINE_ADMIN_TOKEN', () => {
  it('refuses without the token: 401 JSON for a program, 401 and the login form (nothing else) for a browser', async () => {
    const g = await start({ env: { THREADLINE_ADMIN_TOKEN: TOKEN } });
    const program = await fetch(`${g.url}${PAGE}`);
    expect(program.status).toBe(401);
    expect(await program.json()).toMatchObject({ code: 'TL_UNAUTHORIZED' });
    const wrong = await fetch(`${g.url}${PAGE}`, { headers: { authorization: `Bearer ${TOKEN}x` } });
    expect(wrong.status).toBe(401);
    const browser = await fetch(`${g.url}${PAGE}`, { headers: { accept: 'text/html' } });
    expect(browser.status).toBe(401);
    const login = await browser.text();
    expect(login).toContain('action="/v1/admin/login"');
    expect(login).not.toContain('data-metric');
    // Off loopback the token decides, not the address.
    const remote = await g.running.server.inject({ method: 'GET', url: PAGE, remoteAddress: '203.0.113.7', headers: { authorization: `Bearer ${TOKEN}` } });
    expect(remote.statusCode).toBe(200);
  });

  it('logs in with the form: an HttpOnly SameSite=Strict cookie that holds no token, refused once tampered with', async () => {
    const g = await start({ env: { THREADLINE_ADMIN_TOKEN: TOKEN } });
    const login = (token: string) => fetch(`${g.url}/v1/admin/login`, { method: 'POST', redirect: 'manual', headers: FORM, body: form({ token }) });
    const refused = await login('not-the-token');
    expect(refused.status).toBe(401);
    expect(refused.headers.get('set-cookie')).toBeNull();
    const accepted = await login(TOKEN);
    expect(accepted.status).toBe(303);
    const cookie = accepted.headers.get('set-cookie')!;
    expect(cookie).toMatch(/^threadline_admin=\d+\.[\w-]{43}; Path=\/v1\/admin; Max-Age=43200; HttpOnly; SameSite=Strict$/);
    expect(cookie).not.toContain(TOKEN);
    const session = cookie.split(';')[0]!;
    expect((await fetch(`${g.url}${PAGE}`, { headers: { cookie: session } })).status).toBe(200);
    const [name, value] = session.split('=') as [string, string];
    const later = value.replace(/^\d+/, (expires) => String(Number(expires) + 1));
    expect((await fetch(`${g.url}${PAGE}`, { headers: { cookie: `${name}=${later}` } })).status).toBe(401);
    // A login from another origin is refused before the token is looked at.
    const crossSite = await fetch(`${g.url}/v1/admin/login`, { method: 'POST', redirect: 'manual', headers: { ...FORM, origin: 'http://attacker.example' }, body: form({ token: TOKEN }) });
    expect(crossSite.status).toBe(403);
  });

  it('takes no action without the token, whatever the form holds', async () => {
    const { g, id } = await withDeadLetter({ THREADLINE_ADMIN_TOKEN: TOKEN });
    const page = await (await fetch(`${g.url}${PAGE}`, { headers: { authorization: `Bearer ${TOKEN}` } })).text();
    const csrf = csrfOf(page);
    const anonymous = await fetch(`${g.url}${RETRY}`, { method: 'POST', redirect: 'manual', headers: FORM, body: form({ id, csrf }) });
    expect(anonymous.status).toBe(401);
    const withToken = await fetch(`${g.url}${RETRY}`, { method: 'POST', redirect: 'manual', headers: { ...FORM, authorization: `Bearer ${TOKEN}` }, body: form({ id }) });
    expect(withToken.status).toBe(403);
    expect((await g.deliveries({ failedOnly: true })).map((record) => record.id)).toEqual([id]);
  });
});

describe('the operator settings', () => {
  it('refuse a short admin token and a trace UI URL without {traceId}', () => {
    expect(() => readGatewayConfig({ THREADLINE_ADMIN_TOKEN: 'short' })).toThrow(/THREADLINE_ADMIN_TOKEN: is 5 characters/);
    expect(() => readGatewayConfig({ THREADLINE_TRACE_UI_URL: 'http://jaeger.example/trace/' })).toThrow(/holds no \{traceId\}/);
    expect(() => readGatewayConfig({ THREADLINE_TRACE_UI_URL: 'javascript:alert(1)//{traceId}' })).toThrow(/not an http\(s\) URL/);
    expect(readGatewayConfig({ THREADLINE_TRACE_UI_URL: 'https://tempo.example/explore?trace={traceId}' }).operator.traceUiUrl).toBe('https://tempo.example/explore?trace={traceId}');
  });
});
