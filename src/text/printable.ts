/** How text from outside (chats, receivers, trace stores) is made safe to print on a terminal. */

/** One printable line: text from chats and receivers must not move the cursor or recolor the terminal. */
export function printable(text: string): string {
  return text.replace(/[\p{Cc}\u2028\u2029\u202a-\u202e\u2066-\u2069]/gu, escapeChar);
}

/** A control or bidi character as an inert escape (`\n`, `\u001b`). */
export function escapeChar(char: string): string {
  if (char === '\n') return '\\n';
  if (char === '\r') return '\\r';
  if (char === '\t') return '\\t';
  return `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`;
}
