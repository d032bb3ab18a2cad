import { describe, expect, it } from 'vitest';
import { SpanTree } from '../../src/forensics/span-tree.js';
import { hexId, storedSpan, traceOf } from './stored-spans.js';

describe('SpanTree', () => {
  it('chains a span to its root, root first, and stops at a parent the source did not return', () => {
    const traceId = hexId(32);
    const root = storedSpan({ name: 'root', traceId, parentSpanId: hexId(16) });
    const child = storedSpan({ name: 'child', traceId, parentSpanId: root.spanId, startMs: 900 });
    const tree = new SpanTree(traceOf(root, child));
    expect(tree.chain(child).map((span) => span.name)).toEqual(['root', 'child']);
    expect(tree.root(child)).toBe(root);
    expect(tree.roots()).toEqual([root]);
  });

  it('ends on a cycle in malformed data instead of looping', () => {
    const traceId = hexId(32);
    const aId = hexId(16);
    const bId = hexId(16);
    const a = storedSpan({ name: 'a', traceId, spanId: aId, parentSpanId: bId });
    const b = storedSpan({ name: 'b', traceId, spanId: bId, parentSpanId: aId });
    expect(new SpanTree(traceOf(a, b)).chain(a).map((span) => span.name)).toEqual(['b', 'a']);
  });
});
