import type { Attachment } from '../session/delivery.js';
import type { ToolInput } from './tool-input.js';

/**
 * A tool the agent (a command, or the model) can call; made with defineTool. It reads
 * platform, chat and thread from the active context through the session core (getSession,
 * requireSession, sessionEnv), never from an argument: the gateway runs each call inside the
 * turn's session, and code outside the gateway falls back to the THREADLINE_SESSION_* variables.
 */
export interface Tool<Input = Record<string, unknown>> {
  /** `gen_ai.tool.name`, and the function name the model calls. */
  readonly name: string;
  /** What the model is told the tool does. */
  readonly description: string;
  /** Its arguments: the JSON Schema the model is shown, checked before every call, whoever makes it. */
  readonly input: ToolInput<Input>;
  /** Only senders in THREADLINE_ADMINS are offered it and may call it. */
  readonly adminOnly: boolean;
  /** False: kept for commands to explain why it is off, offered to no model. */
  readonly enabled: boolean;
  /** The platforms whose turns are offered it; undefined: every platform. */
  readonly platforms?: readonly string[] | undefined;
  /**
   * Its answers hold nothing but what the caller asked for (a confirmation, a voice note): true.
   * False when they may hold text of others (a command's output, a web page, others' reminders),
   * whose instructions a model would follow: then the model's later admin-only calls wait for
   * an admin's /confirm.
   */
  readonly trustedOutput: boolean;
  /**
   * Its result is recorded under the call's key before the turn goes on, and a turn run again
   * after a crash is answered with it instead of running the call again: for a tool whose
   * effect no id of its own makes once (a foreground shell command).
   */
  readonly recordsResult?: boolean | undefined;
  /**
   * Runs the call; resolves with what the caller is told (one line or a few). Throws a
   * ThreadlineError (TL_TOOL_INPUT, TL_TOOL_LIMIT, ...) whose message the user may read.
   */
  run(input: Input, call: ToolCall): Promise<ToolResult>;
}

/** One call of a tool. */
export interface ToolCall {
  /** Aborted by /stop or shutdown: long foreground work stops. */
  readonly signal: AbortSignal;
  /** The model's id for the call (`gen_ai.tool.call.id`), when a model made it. */
  readonly callId?: string | undefined;
  /**
   * The same for this call when its turn runs again after a crash (the message's id and the
   * call's place in the turn); undefined outside a turn. A tool with lasting effects (a command
   * started, a job stored) makes them once per key.
   */
  readonly idempotencyKey?: string | undefined;
  /**
   * Sends `text` to this call's chat and thread `delayMs` from now (1 s to 365 days): stored,
   * so it is sent after a restart too, and once per call key. Resolves with the job's id (as
   * list_schedules shows it) and when it is due. Set in a gateway; undefined elsewhere.
   */
  readonly later?: ((text: string, delayMs: number) => Promise<{ readonly id: string; readonly at: number }>) | undefined;
  /**
   * The call acts with an admin's rights: an admin's own command, or a model that read only
   * admins' text. A reminder then counts against the gateway's total alone, not the per-chat
   * and per-user caps. Default false.
   */
  readonly byAdmin?: boolean | undefined;
}

export interface ToolResult {
  /** What the caller is told. */
  readonly text: string;
  /** A file to deliver with the answer (the tts tool's voice note). */
  readonly attachment?: Attachment | undefined;
}
