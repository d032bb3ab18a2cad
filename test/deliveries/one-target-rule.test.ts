import { describe, expect, it } from 'vitest';
import { runThreadline } from '../../src/cli/threadline.js';
import { parseTarget } from '../../src/session/target.js';
import type { ReceivedDelivery, TestGateway } from '../../src/testing/index.js';
import { useTestGateways, webhookOrigin } from '../helpers/gateway.js';

const start = useTestGateways();
const ADMINS = { THREADLINE_ADMINS: '*' };
/** What every path says of a home on a platform this gateway (webhook only) does not run. */
const NOT_ENABLED = 'No platform "telegram" is enabled in this gateway (enabled: webhook)';

/** Sends a webhook message from ops/deploys and returns the first `count` deliveries it brings. */
async function ask(g: TestGateway, text: string, count = 1): Promise<ReceivedDelivery[]> {
  const before = g.receiver.unique().size;
  const answer = await g.send({ chat_id: 'ops', thread_id: 'deploys', chat_type: 'group', text });
  expect(answer.status).toBe(202);
  return (await g.receiver.waitFor(before + count)).slice(before);
}

function whereTo(delivery: ReceivedDelivery | undefined): { chat_id: unknown; thread_id: unknown } {
  return { chat_id: delivery?.body.chat_id, thread_id: delivery?.body.thread_id };
}

describe('one rule for a target, whichever path resolves it', () => {
  it('the router: a reply goes to the origin; home:<platform> of a platform not enabled is TL_TARGET_INVALID', async () => {
    const g = await start();
    const [reply] = await ask(g, 'hello');
    expect(whereTo(reply)).toEqual({ chat_id: 'ops', thread_id: 'deploys' });
    const delivery = g.running.gateway.router.deliver({ id: 'home-1', kind: 'send', text: 'x', target: parseTarget('home:telegram'), origin: webhookOrigin('ops', 's-1') });
    await expect(delivery).rejects.toMatchObject({ code: 'TL_TARGET_INVALID', message: NOT_ENABLED });
  });

  it('/send (send_message) and /cron --to origin land where the reply does; both refuse home:telegram as the router does', async () => {
    const g = await start({ env: ADMINS, clock: 'manual' });
    const [reply] = await ask(g, 'hello');
    const sent = (await ask(g, '/send origin progress', 2)).find((delivery) => delivery.body.kind === 'send');
    expect(sent?.body.text).toBe('progress');
    expect(whereTo(sent)).toEqual(whereTo(reply));
    expect(await ask(g, '/cron "* * * * *" --to origin every minute')).toHaveLength(1);
    const before = g.receiver.unique().size;
    await g.advanceTime(60_000);
    const run = (await g.receiver.waitFor(before + 1)).slice(before).find((delivery) => delivery.body.kind === 'cron');
    expect(run?.body.text).toBe('every minute');
    expect(whereTo(run)).toEqual(whereTo(reply));
    for (const command of ['/send home:telegram x', '/cron "* * * * *" --to home:telegram x']) {
      const [refusal] = await ask(g, command);
      expect(refusal!.body.text).toContain(NOT_ENABLED);
      expect(refusal!.body.text).not.toContain('/sethome');
    }
  });

  it('threadline send: origin is the THREADLINE_SESSION_* chat and thread; home:telegram is refused as the router refuses it', async () => {
    const g = await start();
    let err = '';
    const io = { out: () => undefined, err: (text: string) => void (err += text), env: { THREADLINE_DATA_DIR: g.dataDir }, color: false };
    const session = { THREADLINE_SESSION_PLATFORM: 'webhook', THREADLINE_SESSION_CHAT_ID: 'ops', THREADLINE_SESSION_THREAD_ID: 'deploys' };
    const saved = Object.fromEntries(Object.keys(session).map((name) => [name, process.env[name]]));
    Object.assign(process.env, session);
    try {
      expect(await runThreadline(['send', 'origin', 'from', 'the', 'cli'], io)).toBe(0);
      expect(await runThreadline(['send', 'home:telegram', 'x'], io)).toBe(1);
    } finally {
      for (const [name, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
    expect(err).toContain(`${NOT_ENABLED} [TL_TARGET_INVALID]`);
    const [sent] = await g.receiver.waitFor(1, 10_000);
    expect(sent!.body).toMatchObject({ kind: 'send', chat_id: 'ops', thread_id: 'deploys', text: 'from the cli' });
  });

  it('/send, /cron --to and threadline send refuse an explicit target with ids no inbound message could carry, saying why', async () => {
    const g = await start({ env: ADMINS });
    const long = 'x'.repeat(990);
    // The schedule tool's input schema caps a target's length before the resolver sees it.
    const cases: [target: string, reason: RegExp][] = [
      ['webhook:a%0Ab', /chat id "a\\nb" must not contain control characters/],
      ['webhook:%00', /chat id "\\u0000" must not contain control characters/],
      [`webhook:${long}`, /chat id "x{40}…" must be at most 256 characters, got 990|schedule: must NOT have more than 300 characters at target/],
    ];
    for (const [target, reason] of cases) {
      for (const command of [`/send ${target} x`, `/cron "* * * * *" --to ${target} x`]) {
        const [refusal] = await ask(g, command);
        expect(refusal!.body.text).toMatch(reason);
      }
      let err = '';
      const io = { out: () => undefined, err: (text: string) => void (err += text), env: { THREADLINE_DATA_DIR: g.dataDir }, color: false };
      expect(await runThreadline(['send', target, 'x'], io)).toBe(1);
      expect(err).toMatch(reason);
      expect(err).toContain('[TL_TARGET_INVALID]');
    }
    expect(await g.running.store.schedules.all()).toEqual([]);
    expect([...g.receiver.unique().values()].every((delivery) => delivery.body.chat_id === 'ops')).toBe(true);
  });
});
