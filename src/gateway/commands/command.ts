/** The command word of a message, without a Telegram-style @botname suffix. */
export function commandOf(text: string): string | undefined {
  const match = /^\s*(\/[a-z_]+)(?:@\S+)?(?:\s|$)/i.exec(text);
  return match?.[1]?.toLowerCase();
}

/** Commands only admins (THREADLINE_ADMINS) may run; the agent asks turn.authorize before each. */
export const ADMIN_COMMANDS: ReadonlySet<string> = new Set(['/sethome']);
