import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runThreadline } from '../../src/cli/threadline.js';
import { FakeDiscord } from '../../src/testing/index.js';
import { useTempDir } from '../helpers/temp-dir.js';

const tempRoot = useTempDir('doctor-discord');
const TOKEN = 'doctor-discord-token';
const fakes: FakeDiscord[] = [];
afterEach(async () => {
  await Promise.all(fakes.splice(0).map((fake) => fake.close()));
});

async function discordLines(env: Record<string, string>): Promise<string[]> {
  let out = '';
  const io = { out: (text: string) => void (out += text), err: () => undefined, env: { THREADLINE_DATA_DIR: mkdtempSync(join(tempRoot(), 'data-')), ...env } };
  await runThreadline(['doctor'], io);
  return out.trimEnd().split('\n').filter((line) => line.includes(' discord '));
}

async function fake(): Promise<FakeDiscord> {
  const started = await FakeDiscord.start({ token: TOKEN });
  fakes.push(started);
  return started;
}

describe('threadline doctor with Discord', () => {
  it('checks nothing of Discord when it is off', async () => {
    expect(await discordLines({})).toEqual([]);
  });

  it('says the token answers, as which bot, and that the Message Content Intent is on', async () => {
    const discord = await fake();
    expect(await discordLines({ THREADLINE_DISCORD_BOT_TOKEN: TOKEN, THREADLINE_DISCORD_API_ROOT: discord.apiRoot })).toEqual([
      `✓ discord ${discord.apiRoot}/v10: the bot token answers, as threadline (${discord.botId})`,
      `✓ discord ${discord.apiRoot}/v10: the Message Content Intent is on`,
    ]);
  });

  it('fails a token Discord refuses, without showing it', async () => {
    const discord = await fake();
    const lines = await discordLines({ THREADLINE_DISCORD_BOT_TOKEN: 'not-the-token', THREADLINE_DISCORD_API_ROOT: discord.apiRoot });
    expect(lines).toEqual([expect.stringMatching(/^✗ discord .*: the bot token is refused \(401\)/)]);
    expect(lines.join('\n')).not.toContain('not-the-token');
  });

  it('fails when the Message Content Intent is off: Discord would refuse the Gateway connection', async () => {
    const discord = await fake();
    discord.messageContentIntent(false);
    const lines = await discordLines({ THREADLINE_DISCORD_BOT_TOKEN: TOKEN, THREADLINE_DISCORD_API_ROOT: discord.apiRoot });
    expect(lines[1]).toMatch(/^✗ discord .*: the Message Content Intent is off: enable it/);
  });

  it('fails when the API cannot be reached', async () => {
    const discord = await fake();
    const root = discord.apiRoot;
    await discord.close();
    fakes.splice(0);
    expect(await discordLines({ THREADLINE_DISCORD_BOT_TOKEN: TOKEN, THREADLINE_DISCORD_API_ROOT: root })).toEqual([
      expect.stringMatching(/^✗ discord .*: the bot token could not be checked: /),
    ]);
  });
});
