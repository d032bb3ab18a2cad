import { formatDestination, type Destination } from '../../../src/session/delivery.js';
import type { HistoryEntry, HistoryLog } from '../../../src/store/store.js';

/** A HistoryLog in memory, as the store's contract states it: bounded per session, mirrors per destination. */
export class MemoryHistory implements HistoryLog {
  readonly sessions = new Map<string, HistoryEntry[]>();
  readonly mirrors = new Map<string, HistoryEntry[]>();

  async append(sessionId: string, _destination: Destination, entries: readonly HistoryEntry[], keep: number): Promise<void> {
    const kept = [...(this.sessions.get(sessionId) ?? []), ...entries];
    this.sessions.set(sessionId, kept.slice(-keep));
  }

  async mirror(destination: Destination, entry: HistoryEntry, keep: number): Promise<void> {
    const key = formatDestination(destination);
    this.mirrors.set(key, [...(this.mirrors.get(key) ?? []), entry].slice(-keep));
  }

  async recent(sessionId: string, destination: Destination, limit: number): Promise<HistoryEntry[]> {
    const merged = [...(this.sessions.get(sessionId) ?? []), ...(this.mirrors.get(formatDestination(destination)) ?? [])];
    // Stable: entries of one moment keep the order they were written in.
    merged.sort((a, b) => a.at - b.at);
    return merged.slice(-limit);
  }
}
