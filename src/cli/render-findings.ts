import pc from 'picocolors';
import { printable } from '../text/printable.js';
import type { Finding, LostWork, Misroute, RoutingView, SpanRef } from '../forensics/findings.js';

/** What a report says about where it looked. */
export interface ReportScope {
  readonly source: string;
  readonly since: number;
  readonly until: number;
  readonly traces: number;
  /** The store's data dir, when lost work was looked for there too. */
  readonly store?: string;
}

export type Colors = ReturnType<typeof pc.createColors>;

/** One block per finding, then a line saying what was searched and what was found. */
export function findingsText(findings: readonly Finding[], scope: ReportScope, link: (traceId: string) => string | undefined, color: boolean): string {
  const c = pc.createColors(color);
  const blocks = findings.map((finding) => (finding.type === 'misroute' ? misrouteText(finding, link, c) : lostText(finding, link, c)));
  const misroutes = findings.filter((finding) => finding.type === 'misroute').length;
  const lost = findings.length - misroutes;
  const looked = `${scope.traces} ${plural(scope.traces, 'trace')} from ${printable(scope.source)}${scope.store === undefined ? '' : ` and the store in ${printable(scope.store)}`}, ${iso(scope.since)} to ${iso(scope.until)}`;
  const summary =
    findings.length === 0
      ? c.green(`no misroutes, nothing lost: ${looked}`)
      : c.bold(`${misroutes} ${plural(misroutes, 'misroute')}, ${lost} lost: ${looked}`);
  return [...blocks, summary].join('\n\n') + '\n';
}

function misrouteText(m: Misroute, link: (traceId: string) => string | undefined, c: Colors): string {
  const how = m.detectedBy === 'guard' ? 'flagged by the misroute guard' : 'destination differs from its trace';
  const lines = [
    `${c.red(c.bold('MISROUTE'))}  ${printable(m.deliveryKind || 'delivery')} ${printable(m.deliveryId)}  ${outcomeText(m, c)}  ${c.dim(`(${how}, ${iso(m.delivery.at)})`)}`,
    row('origin', routingText(m.origin)),
    row('destination', c.red(routingText(m.destination))),
    row('diverged at', spanText(m.divergedAt)),
  ];
  if (m.work !== undefined) lines.push(row('work', `${m.work.kind}: ${spanText(m.work)}`));
  lines.push(row('trace', traceText(m.delivery.traceId, link, c)));
  if (m.work !== undefined && m.work.traceId !== m.delivery.traceId) lines.push(row('origin trace', traceText(m.work.traceId, link, c)));
  return lines.join('\n');
}

function lostText(l: LostWork, link: (traceId: string) => string | undefined, c: Colors): string {
  const lines = [
    `${c.yellow(c.bold('LOST'))}  ${l.what} ${printable(l.id)}  ${c.yellow(printable(l.state))}  ${c.dim(`(due ${iso(l.dueAt)}, from the ${l.source})`)}`,
  ];
  if (l.origin !== undefined) lines.push(row('origin', routingText(l.origin)));
  if (l.destination !== undefined) lines.push(row('destination', routingText(l.destination)));
  if (l.lastError !== undefined) lines.push(row('last error', printable(l.lastError.slice(0, 300))));
  if (l.attempts !== undefined) lines.push(row('attempts', String(l.attempts)));
  if (l.originTraceId !== undefined) lines.push(row('origin trace', traceText(l.originTraceId, link, c)));
  return lines.join('\n');
}

function outcomeText(m: Misroute, c: Colors): string {
  if (m.outcome === 'refused') return c.green('refused by strict routing');
  if (m.outcome === 'failed') return c.yellow('failed');
  const where = m.origin.platform !== m.destination.platform ? 'platform' : m.origin.chatId !== m.destination.chatId ? 'chat' : 'thread';
  return c.red(`${m.outcome === 'sent' ? 'sent to' : 'queued for'} another ${where}`);
}

/** `webhook chat A thread 1`; the platform alone when the spans carry no ids. */
export function routingText(routing: RoutingView): string {
  const parts = [printable(routing.platform)];
  if (routing.chatId !== undefined) parts.push(`chat ${printable(routing.chatId)}`);
  if (routing.threadId !== undefined) parts.push(`thread ${printable(routing.threadId)}`);
  return parts.join(' ');
}

export function spanText(span: SpanRef): string {
  const routing = span.routing === undefined ? '' : ` [${routingText(span.routing)}]`;
  return `${printable(span.name)} at ${iso(span.at)}${routing}  span ${span.spanId}`;
}

export function traceText(traceId: string, link: (traceId: string) => string | undefined, c: Colors): string {
  const url = link(traceId);
  return url === undefined ? traceId : `${traceId}  ${c.cyan(printable(url))}`;
}

function row(label: string, value: string): string {
  return `  ${label.padEnd(13)}${value}`;
}

export function iso(ms: number): string {
  return Number.isFinite(ms) ? new Date(ms).toISOString() : String(ms);
}

export function plural(count: number, word: string): string {
  return count === 1 ? word : `${word}s`;
}

/** The findings for machines: the same fields, times as ISO text, and each trace's link. */
export function findingsJson(findings: readonly Finding[], scope: ReportScope, link: (traceId: string) => string | undefined): string {
  const withLinks = findings.map((finding) => {
    const traceId = finding.type === 'misroute' ? finding.delivery.traceId : finding.originTraceId;
    const url = traceId === undefined ? undefined : link(traceId);
    return { ...finding, ...(url === undefined ? {} : { link: url }) };
  });
  const body = {
    source: scope.source,
    since: iso(scope.since),
    until: iso(scope.until),
    traces: scope.traces,
    ...(scope.store === undefined ? {} : { store: scope.store }),
    misroutes: withLinks.filter((finding) => finding.type === 'misroute'),
    lost: withLinks.filter((finding) => finding.type === 'lost'),
  };
  return JSON.stringify(body, (key, value: unknown) => (typeof value === 'number' && (key === 'at' || key === 'dueAt') ? iso(value) : value), 2) + '\n';
}
