import type { StoredSpan, StoredTrace } from './trace-model.js';

/** The parent-child structure of one trace's spans, as far as the source returned them. */
export class SpanTree {
  private readonly byId = new Map<string, StoredSpan>();

  constructor(readonly trace: StoredTrace) {
    for (const span of trace.spans) this.byId.set(span.spanId, span);
  }

  span(spanId: string): StoredSpan | undefined {
    return this.byId.get(spanId);
  }

  /** `span` and its ancestors, root first; stops at a parent the source did not return (or a cycle). */
  chain(span: StoredSpan): StoredSpan[] {
    const chain = [span];
    const seen = new Set([span.spanId]);
    let current = span;
    while (current.parentSpanId !== undefined) {
      const parent = this.byId.get(current.parentSpanId);
      if (parent === undefined || seen.has(parent.spanId)) break;
      seen.add(parent.spanId);
      chain.push(parent);
      current = parent;
    }
    return chain.reverse();
  }

  /** The topmost span above `span` that the source returned. */
  root(span: StoredSpan): StoredSpan {
    return this.chain(span)[0]!;
  }

  /** The trace's roots: spans without a parent in it, earliest first. */
  roots(): StoredSpan[] {
    return this.trace.spans.filter((span) => span.parentSpanId === undefined || !this.byId.has(span.parentSpanId)).sort((a, b) => a.startMs - b.startMs);
  }
}
