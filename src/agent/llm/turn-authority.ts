import type { HistoryEntry } from '../../store/store.js';
import type { Tool } from '../../tools/tool.js';
import type { Turn } from '../agent.js';
import { toolAuthor, unionOfAuthors, type Author } from '../author.js';
import { authorsOf } from './conversation.js';

/**
 * Whose text the model has read in a turn: the authors of the history it was given, the
 * sender, and each tool whose answer may hold text of others once the model read it. The model
 * acts with the rights they all hold now (turn.isAdmin), so an admin's turn is no way around a
 * non-admin's instructions.
 */
export class TurnAuthority {
  private current: Author[];
  /** Tools whose answers came in this round: the model reads them at its next request. */
  private unread: Author[] = [];
  /** A call of this turn waits for an admin already: one request a turn. */
  holding = false;

  constructor(
    private readonly turn: Turn,
    earlier: readonly HistoryEntry[],
  ) {
    this.current = unionOfAuthors(...earlier.map(authorsOf), [turn.author]);
  }

  /** Recorded with each entry the turn writes: what the model says may repeat any of them. */
  get authors(): readonly Author[] {
    return this.unread.length === 0 ? this.current : unionOfAuthors(this.current, this.unread);
  }

  /** `tool` answered; the model reads it at its next request (calls of the same answer were asked before). */
  answered(tool: Tool): void {
    if (!tool.trustedOutput) this.unread = unionOfAuthors(this.unread, [toolAuthor(tool.name)]);
  }

  /** The model is asked again, with every answer so far before it. */
  nextRequest(): void {
    this.current = this.authors.slice();
    this.unread = [];
  }

  /** Those read so far who hold no admin rights now; empty: the model may do what the sender may. */
  unprivileged(): Author[] {
    return this.current.filter((author) => !this.turn.isAdmin(author));
  }
}
