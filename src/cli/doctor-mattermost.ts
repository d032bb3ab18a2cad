import { messageOf, ThreadlineError } from '../errors.js';
import { readMattermostConfig, type MattermostConfig } from '../gateway/gateway-config.js';
import type { MattermostClient } from '../platforms/mattermost/mattermost-client.js';
import { safeUrl } from '../text/redact-secrets.js';

/** One line of `threadline doctor`: passed, passed with something to fix (`warning`), or failed. */
export interface MattermostCheck {
  readonly ok: boolean;
  readonly warning?: true;
  readonly line: string;
}

const TIMEOUT_MS = 5_000;

/**
 * With Mattermost configured: the token answers users/me (and is a bot account's), the bot is
 * in a team and in channels, and the websocket authenticates with it (a proxy that drops
 * websockets shows here). Nothing is posted, and the websocket is closed at once.
 */
export async function checkMattermost(env: NodeJS.ProcessEnv): Promise<MattermostCheck[]> {
  let config: MattermostConfig | undefined;
  try {
    config = readMattermostConfig(env);
  } catch (error) {
    if (!(error instanceof ThreadlineError)) throw error;
    return [{ ok: false, line: 'mattermost not checked: the Mattermost settings are invalid' }];
  }
  if (config === undefined) return [];
  const where = `mattermost ${safeUrl(config.url)}`;
  // Loaded only with Mattermost configured, as the gateway loads it: every other command starts without its SDK.
  const { MattermostApiError, MattermostClient } = await import('../platforms/mattermost/mattermost-client.js');
  const client = new MattermostClient({ url: config.url, token: config.token, timeoutMs: TIMEOUT_MS });
  let me: { username: string; is_bot?: boolean };
  try {
    me = await client.getMe();
  } catch (error) {
    const refused = error instanceof MattermostApiError && (error.status === 401 || error.status === 403);
    return [
      {
        ok: false,
        line: refused
          ? `${where}: THREADLINE_MATTERMOST_TOKEN was refused (users/me answered ${(error as InstanceType<typeof MattermostApiError>).status}): make a new access token for the bot account`
          : `${where}: users/me failed: ${messageOf(error)}`,
      },
    ];
  }
  const results: MattermostCheck[] = [{ ok: true, line: `${where}: the token is accepted: @${me.username}` }];
  if (me.is_bot !== true) results.push({ ok: true, warning: true, line: `mattermost: @${me.username} is not a bot account: its posts count as a person's; a bot account's token is meant` });
  results.push(await checkMembership(client));
  results.push(await checkWebsocket(config, where));
  return results;
}

/** The bot answers only where it is a member: of a team, and of its channels (or direct messages). */
async function checkMembership(client: MattermostClient): Promise<MattermostCheck> {
  try {
    const teams = await client.getMyTeams();
    if (teams.length === 0) return { ok: true, warning: true, line: 'mattermost: the bot is in no team: add it to a team, and to the channels it should answer in' };
    const channels = new Set<string>();
    for (const team of teams) for (const channel of await client.getMyChannels(team.id)) channels.add(channel.id);
    const line = `mattermost: the bot is in ${teams.length} ${teams.length === 1 ? 'team' : 'teams'} and ${channels.size} ${channels.size === 1 ? 'channel' : 'channels'}`;
    return channels.size === 0 ? { ok: true, warning: true, line: `${line}: add it to the channels it should answer in` } : { ok: true, line };
  } catch (error) {
    return { ok: false, line: `mattermost: its teams and channels could not be listed: ${messageOf(error)}` };
  }
}

async function checkWebsocket(config: MattermostConfig, where: string): Promise<MattermostCheck> {
  try {
    const { MattermostSocket } = await import('../platforms/mattermost/mattermost-socket.js');
    const socket = await MattermostSocket.open({ url: config.url, token: config.token, connectTimeoutMs: TIMEOUT_MS, pingIntervalMs: 60_000, onEvent: () => {} });
    await socket.close();
    return { ok: true, line: `${where}: the websocket authenticates` };
  } catch (error) {
    return { ok: false, line: `${where}: the websocket did not authenticate: ${messageOf(error)}` };
  }
}
