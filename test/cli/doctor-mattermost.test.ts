import { afterEach, describe, expect, it } from 'vitest';
import { checkMattermost } from '../../src/cli/doctor-mattermost.js';
import { FakeMattermost } from '../../src/testing/index.js';
import { startLocalServer, type LocalServer } from '../../src/testing/local-server.js';
import { until } from '../helpers/gateway.js';

const fakes: (FakeMattermost | LocalServer)[] = [];
afterEach(async () => {
  await Promise.all(fakes.splice(0).map((fake) => fake.close()));
});

async function fake(): Promise<FakeMattermost> {
  const started = await FakeMattermost.start({ token: 'doctor-token' });
  fakes.push(started);
  return started;
}

const env = (url: string, token = 'doctor-token') => ({ THREADLINE_MATTERMOST_URL: url, THREADLINE_MATTERMOST_TOKEN: token });

describe('threadline doctor: mattermost', () => {
  it('checks nothing when Mattermost is not configured', async () => {
    expect(await checkMattermost({})).toEqual([]);
  });

  it('passes with a bot token the server accepts, the bot in a team and channels, and the websocket authenticating', async () => {
    const server = await fake();
    server.addChannel();
    server.addChannel({ type: 'D' });
    expect(await checkMattermost(env(server.url))).toEqual([
      { ok: true, line: `mattermost ${server.url}: the token is accepted: @threadline` },
      { ok: true, line: 'mattermost: the bot is in 1 team and 2 channels' },
      { ok: true, line: `mattermost ${server.url}: the websocket authenticates` },
    ]);
    // Closed again at once, having posted nothing.
    await until(() => server.openConnections === 0);
    expect(server.sent).toEqual([]);
  });

  it('warns when the bot is in no channel yet', async () => {
    const server = await fake();
    const results = await checkMattermost(env(server.url));
    expect(results[1]).toEqual({ ok: true, warning: true, line: 'mattermost: the bot is in 1 team and 0 channels: add it to the channels it should answer in' });
  });

  it('fails on a refused token, saying what to do, without the token', async () => {
    const server = await fake();
    const results = await checkMattermost(env(server.url, 'wrong-token-s3cr3t'));
    expect(results).toEqual([
      { ok: false, line: `mattermost ${server.url}: THREADLINE_MATTERMOST_TOKEN was refused (users/me answered 401): make a new access token for the bot account` },
    ]);
  });

  it('fails when the websocket does not come through (a proxy without websocket upgrades)', async () => {
    const server = await fake();
    // REST answers; the websocket's upgrade is refused, as by a proxy that does not pass it.
    const proxy = await startLocalServer(async (request) => {
      const answer = await fetch(`${server.url}${request.path}`, { headers: { authorization: String(request.headers['authorization']) } });
      return { status: answer.status, body: (await answer.json()) as object };
    });
    fakes.push(proxy);
    const results = await checkMattermost(env(proxy.origin));
    expect(results[0]).toMatchObject({ ok: true });
    expect(results.at(-1)).toMatchObject({ ok: false, line: expect.stringMatching(/: the websocket did not authenticate: /) });
  });

  it('refuses to check settings that make no configuration', async () => {
    expect(await checkMattermost({ THREADLINE_MATTERMOST_TOKEN: 'x' })).toEqual([{ ok: false, line: 'mattermost not checked: the Mattermost settings are invalid' }]);
  });
});
