import { createHash } from 'node:crypto';
import { createContextKey, type Context } from '@opentelemetry/api';
import { activeContext } from '../session/index.js';
import type { CallResults } from '../store/store.js';

/** The turn's message id, how many tool calls it has made, and where their results are recorded. */
interface TurnCalls {
  readonly messageId: string;
  readonly results: CallResults | undefined;
  calls: number;
}

const TURN_CALLS = createContextKey('threadline.tools.turn-calls');

/**
 * `ctx` as the context of a turn of message `messageId`: its tool calls get keys that a replay
 * of the turn repeats, and the calls of a tool that records its result record it in `results`.
 */
export function contextWithTurnCalls(ctx: Context, messageId: string, results?: CallResults): Context {
  return ctx.setValue(TURN_CALLS, { messageId, results, calls: 0 } satisfies TurnCalls);
}

/**
 * The next tool call's idempotency key in this turn: the message's id and the call's place, so
 * a turn run again after a crash gives its calls the same keys. Undefined outside a turn.
 */
export function nextCallKey(ctx: Context = activeContext()): string | undefined {
  const turn = ctx.getValue(TURN_CALLS) as TurnCalls | undefined;
  if (turn === undefined) return undefined;
  return `${turn.messageId}/${++turn.calls}`;
}

/** Where this turn's calls record their results: the message they belong to and the store; undefined outside a turn. */
export function turnCallResults(ctx: Context = activeContext()): { readonly messageId: string; readonly results: CallResults } | undefined {
  const turn = ctx.getValue(TURN_CALLS) as TurnCalls | undefined;
  return turn?.results === undefined ? undefined : { messageId: turn.messageId, results: turn.results };
}

/** A short id users type (`prefix` and 5 base-36 characters) made from a call key: the same key, the same id. */
export function shortIdOf(prefix: string, key: string): string {
  const digest = createHash('sha256').update(key).digest();
  let id = prefix;
  for (let i = 0; i < 5; i++) id += (digest[i]! % 36).toString(36);
  return id;
}
