/**
 * `threadline doctor`'s Discord checks, with THREADLINE_DISCORD_BOT_TOKEN set: the token
 * answers GET /users/@me (the bot it names), and the application has the Message Content
 * Intent the Gateway is identified with (GET /applications/@me), without which Discord refuses
 * the connection (4014).
 */
import { readText, readUrl } from '../config/read-setting.js';
import { messageOf } from '../errors.js';
import { printable } from '../text/printable.js';
import { safeUrl } from '../text/redact-secrets.js';

/** How long each REST call gets. */
const TIMEOUT_MS = 5_000;
/** GATEWAY_MESSAGE_CONTENT and GATEWAY_MESSAGE_CONTENT_LIMITED: the intent is enabled (in 100 servers or more, or fewer). */
const MESSAGE_CONTENT_FLAGS = (1 << 18) | (1 << 19);

export interface DiscordCheck {
  readonly ok: boolean;
  readonly line: string;
}

/** One line a check; nothing when Discord is off. */
export async function checkDiscord(env: NodeJS.ProcessEnv): Promise<DiscordCheck[]> {
  const token = readText(env, 'THREADLINE_DISCORD_BOT_TOKEN');
  if (token === undefined) return [];
  const root = `${readUrl(env, 'THREADLINE_DISCORD_API_ROOT').replace(/\/$/, '')}/v10`;
  const where = `discord ${safeUrl(root)}`;
  const me = await get(root, '/users/@me', token);
  if (!me.ok) return [{ ok: false, line: `${where}: the bot token ${me.reason}` }];
  const bot = `${printable(String(me.body['username'] ?? '?'))} (${printable(String(me.body['id'] ?? '?'))})`;
  const application = await get(root, '/applications/@me', token);
  const flags = Number(application.ok ? application.body['flags'] : 0);
  return [
    { ok: true, line: `${where}: the bot token answers, as ${bot}` },
    !application.ok
      ? { ok: false, line: `${where}: the application ${application.reason}` }
      : (flags & MESSAGE_CONTENT_FLAGS) === 0
        ? { ok: false, line: `${where}: the Message Content Intent is off: enable it on the Bot page of the Developer Portal, or Discord refuses the Gateway connection (4014)` }
        : { ok: true, line: `${where}: the Message Content Intent is on` },
  ];
}

type Answer = { readonly ok: true; readonly body: Record<string, unknown> } | { readonly ok: false; readonly reason: string };

async function get(root: string, path: string, token: string): Promise<Answer> {
  let response: Response;
  try {
    response = await fetch(`${root}${path}`, { headers: { authorization: `Bot ${token}` }, signal: AbortSignal.timeout(TIMEOUT_MS) });
  } catch (error) {
    return { ok: false, reason: `could not be checked: ${messageOf(error)}` };
  }
  if (response.status === 401) return { ok: false, reason: 'is refused (401): copy it again from the Bot page of the Developer Portal' };
  if (!response.ok) return { ok: false, reason: `could not be checked: GET ${path} answered ${response.status}` };
  const body = (await response.json().catch(() => undefined)) as unknown;
  return typeof body === 'object' && body !== null ? { ok: true, body: body as Record<string, unknown> } : { ok: false, reason: `could not be checked: GET ${path} answered no JSON object` };
}
