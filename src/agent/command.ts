/** The command word of a message, without a Telegram-style @botname suffix. */
export function commandOf(text: string): string | undefined {
  const match = /^\s*(\/[a-z_]+)(?:@\S+)?(?:\s|$)/i.exec(text);
  return match?.[1]?.toLowerCase();
}
