import type { StoredTrace } from './trace-model.js';

/** What a forensics command asks a trace store for. */
export interface TraceQuery {
  /** service.name of the gateway's spans. */
  readonly service: string;
  /** Window of span start times, ms since the epoch. */
  readonly since: number;
  readonly until: number;
  /**
   * `deliveries`: traces holding a gateway.deliver span (those with an error first);
   * `conversation`: traces holding a span stamped with `chatId` (and `threadId`).
   */
  readonly purpose: 'deliveries' | 'conversation';
  /** An id as the spans carry it: the pseudonym in hmac privacy. */
  readonly chatId?: string;
  readonly threadId?: string;
  /** At most this many traces per search. */
  readonly limit: number;
}

/** A trace store the forensics commands read: Jaeger, Tempo or the local trace file. */
export interface TraceSource {
  /** Where the traces come from, for messages: `jaeger http://…`, `file data/traces.jsonl`. */
  readonly description: string;
  /** The traces matching `query`, each as complete as the store has it. */
  search(query: TraceQuery): Promise<StoredTrace[]>;
  /** One trace by id (lowercase hex), or undefined when the store does not have it. */
  get(traceId: string): Promise<StoredTrace | undefined>;
  /** Where a person opens the trace, or undefined when the source has no viewer. */
  link(traceId: string): string | undefined;
  /** What the reads so far skipped and a reader should know (printed on stderr). */
  warnings?(): string[];
}
