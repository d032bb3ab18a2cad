import type { Session } from '../session/index.js';
import type { Attachment, CommandButton, Destination } from '../session/delivery.js';
import type { Author } from './author.js';

/** One turn: a message of a session, and what the agent may do in answer. */
export interface Turn {
  readonly session: Session;
  readonly text: string;
  /** The gateway's id for the message. */
  readonly messageId: string;
  readonly traceId: string;
  /**
   * Whether the sender is in THREADLINE_ADMINS, as the platform proves who sent it: decides
   * which tools the turn offers (offeredTools). Reading it refuses nothing; authorize() does.
   */
  readonly senderIsAdmin: boolean;
  /** The sender as history records authors: its THREADLINE_ADMINS entry when the platform proves it. */
  readonly author: Author;
  /**
   * Whether `author` (of this message or one an agent read from history) holds admin rights
   * now, by THREADLINE_ADMINS: the model acts with the rights of everyone whose text it read.
   */
  isAdmin(author: Author): boolean;
  /** Aborted by /stop or shutdown; long work should watch it. */
  readonly signal: AbortSignal;
  /**
   * Replies to the chat and thread the message came from, with a file if given (a voice note)
   * and a button that posts a command as whoever presses it, where the platform has buttons.
   */
  reply(text: string, options?: { readonly attachment?: Attachment | undefined; readonly button?: CommandButton | undefined }): Promise<void>;
  /**
   * The answer as written so far (the whole text, not a delta), for platforms that can show
   * it while it is written (a Telegram draft, a live message edited as it grows). Best-effort:
   * the answer itself still goes out with reply(), which replaces it. Absent where nothing
   * shows it.
   */
  progress?(text: string): void;
  /** Makes this chat and thread the platform's home channel (target of `home` deliveries). */
  setHome(): Promise<Destination>;
  /** Starts a new conversation in this chat: later messages get a new session id. */
  newConversation(): Promise<void>;
  /**
   * Whether the sender may run admin command `command`, decided by the gateway from
   * THREADLINE_ADMINS and the platform's proof of who sent the message, never from its text.
   * A refusal is answered (a reply saying why), recorded (span event `command.refused`) and
   * logged before this resolves false.
   */
  authorize(command: string): Promise<boolean>;
}

/** The seam between the gateway and whatever answers messages. */
export interface Agent {
  handle(turn: Turn): Promise<void>;
  /** Commands (`/confirm`) this agent answers itself; every other command goes to the gateway's. */
  readonly commands?: ReadonlySet<string> | undefined;
}
