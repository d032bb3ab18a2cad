import pc from 'picocolors';
import { printable } from '../text/printable.js';
import type { DeliverySummary, TraceSummary } from '../forensics/conversation-traces.js';
import { iso, plural, routingText, traceText, type Colors, type ReportScope } from './render-findings.js';

/** The traces of one conversation, newest first: root, deliveries, links; then what was searched. */
export function tracesText(traces: readonly TraceSummary[], scope: ReportScope, link: (traceId: string) => string | undefined, color: boolean): string {
  const c = pc.createColors(color);
  const blocks = traces.map((summary) => {
    const { root } = summary;
    const status = root.status === 'error' ? c.red(`error${root.statusMessage === undefined ? '' : `: ${printable(root.statusMessage.slice(0, 200))}`}`) : c.green('ok');
    const lines = [
      `${c.bold(printable(root.name))}  ${root.kind}  ${iso(root.at)}  ${Math.round(root.durationMs)} ms  ${status}  ${c.dim(`${summary.spanCount} ${plural(summary.spanCount, 'span')}`)}`,
      `  trace        ${traceText(summary.traceId, link, c)}`,
    ];
    if (root.routing !== undefined) lines.push(`  routing      ${routingText(root.routing)}`);
    for (const linked of summary.links) lines.push(`  linked from  ${traceText(linked.traceId, link, c)}  span ${linked.spanId}`);
    for (const delivery of summary.deliveries) lines.push(`  delivery     ${deliveryText(delivery, c)}`);
    return lines.join('\n');
  });
  const looked = `${traces.length} ${plural(traces.length, 'trace')} from ${printable(scope.source)}, ${iso(scope.since)} to ${iso(scope.until)}`;
  return [...blocks, c.bold(looked)].join('\n\n') + '\n';
}

function deliveryText(d: DeliverySummary, c: Colors): string {
  const outcome = d.outcome === 'failed' ? c.red(`failed${d.error === undefined ? '' : `: ${printable(d.error.slice(0, 200))}`}`) : d.outcome;
  const to = d.destination === undefined ? '' : ` to ${routingText(d.destination)}`;
  const target = d.target === undefined ? '' : ` (${printable(d.target)})`;
  const attempt = d.attempt !== undefined && d.attempt > 1 ? ` attempt ${d.attempt}` : '';
  const mismatch = d.mismatch ? `  ${c.red(c.bold('MISROUTE'))} origin ${routingText(d.origin ?? { platform: '?' })}` : '';
  return `${printable(d.kind)} ${printable(d.id)}${to}${target}${attempt}  ${outcome}${mismatch}`;
}

/** The summaries for machines, times as ISO text, each with its link. */
export function tracesJson(traces: readonly TraceSummary[], scope: ReportScope, link: (traceId: string) => string | undefined): string {
  const body = {
    source: scope.source,
    since: iso(scope.since),
    until: iso(scope.until),
    traces: traces.map((summary) => {
      const url = link(summary.traceId);
      return { ...summary, ...(url === undefined ? {} : { link: url }) };
    }),
  };
  return JSON.stringify(body, (key, value: unknown) => (typeof value === 'number' && key === 'at' ? iso(value) : value), 2) + '\n';
}
