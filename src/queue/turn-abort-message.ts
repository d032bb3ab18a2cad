/** What an instance publishes on the abort channel for /stop of a session whose turn runs elsewhere. */
export interface TurnAbortMessage {
  readonly sessionId: string;
  readonly reason: string;
  /** The publishing instance: it has aborted what ran there already, so it ignores its own message. */
  readonly from: string;
}

/** The message as published. */
export function encodeTurnAbort(message: TurnAbortMessage): string {
  return JSON.stringify(message);
}

/** The message read from the channel, or undefined when it is not one (anyone can publish there). */
export function decodeTurnAbort(payload: string): TurnAbortMessage | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(payload);
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null) return undefined;
  const { sessionId, reason, from } = parsed as Record<string, unknown>;
  if (typeof sessionId !== 'string' || typeof reason !== 'string' || typeof from !== 'string') return undefined;
  return { sessionId, reason, from };
}
