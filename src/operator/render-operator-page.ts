import { createHash } from 'node:crypto';
import type { Destination } from '../session/delivery.js';
import type { RoutingView } from '../forensics/findings.js';
import type { RoutingSnapshot } from '../session/index.js';
import { redactText } from '../text/redact-secrets.js';
import { VERSION } from '../version.js';
import { ADMIN_PATH } from './admin-access.js';
import { deliveryChart, milliseconds } from './delivery-chart.js';
import { html, SafeHtml, type HtmlValue } from './html.js';
import type { OperatorView } from './operator-view.js';
import { traceLink } from './trace-link.js';

/** Text from chats and errors is cut to this many characters. */
const SHOWN_CHARS = 160;
/** Seconds between the page's own reloads. */
export const REFRESH_SECONDS = 15;
export const RETRY_PATH = `${ADMIN_PATH}/dead-letters/retry`;
export const LOGIN_PATH = `${ADMIN_PATH}/login`;
export const LOGOUT_PATH = `${ADMIN_PATH}/logout`;

const STYLE = `body{font-family:system-ui,sans-serif;margin:1.5rem;color:#222}h1{font-size:1.4rem}h2{font-size:1.1rem;margin-top:1.8rem}
table{border-collapse:collapse;font-size:.85rem}th,td{border:1px solid #ccc;padding:.25rem .5rem;text-align:left;vertical-align:top}
th{background:#f3f3f3}td.num{text-align:right;font-variant-numeric:tabular-nums}.empty{color:#777}.notice{background:#eef6ee;padding:.5rem}
.refused{background:#fbeaea;padding:.5rem}code{font-size:.8rem;word-break:break-all}form{margin:0}`;

/**
 * The page's Content-Security-Policy: no script at all, its one style block by hash, forms only
 * to itself, never framed (the retry buttons cannot be clickjacked).
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  `style-src 'sha256-${createHash('sha256').update(STYLE).digest('base64')}'`,
  "img-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

export interface PageOptions {
  readonly traceUiUrl: string | undefined;
  /** The hidden field of every form. */
  readonly csrf: string;
  /** Logged in with the cookie: offer to log out. */
  readonly loggedIn: boolean;
  /** The outcome of a retry just made, from the redirect after it. */
  readonly retried?: 'queued' | 'none' | undefined;
}

export function renderOperatorPage(view: OperatorView, options: PageOptions): string {
  const { health } = view;
  const link = (traceId: string | undefined) => traceCell(options.traceUiUrl, traceId);
  const deadLetterCount = `${view.deadLetters.length}${view.moreDeadLetters ? '+' : ''}`;
  const summary: [string, string, HtmlValue][] = [
    ['status', 'Status', health.status],
    ['queued', 'Messages waiting or running here', health.queued],
    ['live-turns', 'Turns running here', view.liveTurns.length],
    ['outbox-open', 'Outbox: deliveries not yet sent', health.outbox.open],
    ['outbox-full-chats', 'Chats at their outbox cap', health.outbox.fullChats],
    ['dead-letters', 'Dead letters', deadLetterCount],
    ['delivered', 'Delivered since start (this instance)', health.deliveries.delivered],
    ['retried', 'Retried since start', health.deliveries.retried],
    ['failed', 'Given up since start', health.deliveries.failed],
    ['mismatches', 'Misroutes flagged since start', health.deliveries.mismatches],
    ['commands', 'Background commands running', view.commandCount],
    ['schedules', 'Reminders and cron jobs', view.scheduleCount],
    ['lost', 'Lost work (due over 10 min ago)', view.lost.length],
  ];
  const body = html`
<header>
<h1>threadline operator · ${VERSION}</h1>
<p>Read at ${iso(view.now)}; reloads every ${REFRESH_SECONDS} s.${health.reasons.length === 0 ? '' : html` <strong>${health.reasons.join(' · ')}</strong>`}</p>
${options.loggedIn ? html`<form method="post" action="${LOGOUT_PATH}"><input type="hidden" name="csrf" value="${options.csrf}"><button type="submit">Log out</button></form>` : ''}
</header>
${options.retried === 'queued' ? html`<p class="notice" role="status">Queued the dead letter to be sent again: it leaves within a second.</p>` : ''}
${options.retried === 'none' ? html`<p class="refused" role="status">That delivery is no longer a dead letter (sent again already, or expired).</p>` : ''}
<section id="summary"><h2>Now</h2>
<table><tbody>${summary.map(([key, label, value]) => html`<tr><th scope="row">${label}</th><td class="num" data-metric="${key}">${value}</td></tr>`)}</tbody></table>
</section>
<section id="chart"><h2>Deliveries a minute and their latency, last hour (this instance)</h2>
${deliveryChart(view.minutes)}
<p>Bars: deliveries accepted by their platform a minute. Line: mean time from the message's acceptance (or the delivery's creation, for other work) to the platform's.</p>
</section>
${section('live-turns', 'Turns running now', ['Chat', 'Thread', 'Running for', 'Message', 'Trace'], view.liveTurns.map((turn) => [
  html`${turn.platform}:${turn.chatId}${turn.chatName === undefined ? '' : html` <em>${cut(turn.chatName)}</em>`}`,
  turn.threadId ?? '',
  milliseconds(view.now - turn.startedAt),
  html`<code>${turn.messageId}</code>`,
  link(turn.traceId),
]))}
${section('dead-letters', `Dead letters${view.moreDeadLetters ? ` (the newest ${view.deadLetters.length})` : ''}`, ['Id', 'Kind', 'To', 'Attempts', 'Failed at', 'Error', 'Text', 'Trace', ''], view.deadLetters.map((record) => [
  html`<code>${record.id}</code>`,
  record.kind,
  where(record.destination),
  html`<span class="num">${record.attempts}</span>`,
  record.finishedAt === undefined ? '' : iso(record.finishedAt),
  cut(redactText(record.lastError ?? '')),
  cut(record.text),
  link(traceOf(record.origin)),
  html`<form method="post" action="${RETRY_PATH}"><input type="hidden" name="csrf" value="${options.csrf}"><input type="hidden" name="id" value="${record.id}"><button type="submit" data-retry="${record.id}">Retry</button></form>`,
]))}
${section('misroutes', 'Misroutes kept as dead letters', ['Id', 'Work began in', 'Was bound for', 'Refused at', 'Trace'], view.misroutes.map((record) => [
  html`<code>${record.id}</code>`,
  originOf(record.origin),
  where(record.destination),
  record.finishedAt === undefined ? '' : iso(record.finishedAt),
  link(traceOf(record.origin)),
]))}
${section('lost', 'Lost work', ['What', 'Id', 'State', 'Due', 'To', 'From', 'Error', 'Trace'], view.lost.map((work) => [
  work.what,
  html`<code>${work.id}</code>`,
  work.state,
  iso(work.dueAt),
  work.destination === undefined ? '' : where(work.destination),
  work.origin === undefined ? '' : where(work.origin),
  cut(redactText(work.lastError ?? '')),
  link(work.originTraceId),
]))}
${section('commands', 'Background commands', ['Id', 'Chat', 'Command', 'Started', 'Instance', 'Trace'], view.commands.map((record) => [
  html`<code>${record.id}</code>`,
  where(record.destination),
  html`<code>${cut(redactText(record.command))}</code>`,
  iso(record.startedAt),
  record.instance ?? '',
  link(traceOf(record.origin)),
]))}
${section('schedules', 'Reminders and cron jobs', ['Id', 'Chat', 'When', 'Next run', 'Target', 'Text', 'Trace'], view.schedules.map((record) => [
  html`<code>${record.id}</code>`,
  where(record.destination),
  record.cron === undefined ? 'once' : html`<code>${record.cron}</code>${record.timezone === undefined ? '' : ` (${record.timezone})`}`,
  iso(record.nextAt),
  record.target,
  cut(record.text),
  link(traceOf(record.origin)),
]))}`;
  return document('threadline operator', body, true);
}

/** The login form of a gateway with THREADLINE_ADMIN_TOKEN; `wrong` after a token that did not match. */
export function renderLoginPage(wrong: boolean): string {
  const body = html`
<h1>threadline operator</h1>
${wrong ? html`<p class="refused" role="alert">That is not the admin token.</p>` : ''}
<form method="post" action="${LOGIN_PATH}">
<label>Admin token (THREADLINE_ADMIN_TOKEN) <input type="password" name="token" autocomplete="current-password" required></label>
<button type="submit">Log in</button>
</form>`;
  return document('threadline operator: log in', body, false);
}

/** The style block is inserted as written (this module's constant): its hash is in the CSP. */
function document(title: string, body: SafeHtml, refresh: boolean): string {
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
${refresh ? html`<meta http-equiv="refresh" content="${REFRESH_SECONDS}">` : ''}
<meta name="referrer" content="same-origin">
<title>${title}</title>
<style>${new SafeHtml(STYLE)}</style>
</head><body>${body}
</body></html>
`.markup;
}

function section(id: string, title: string, headings: readonly string[], rows: readonly (readonly HtmlValue[])[]): SafeHtml {
  const content =
    rows.length === 0
      ? html`<p class="empty">None.</p>`
      : html`<table><thead><tr>${headings.map((heading) => html`<th scope="col">${heading}</th>`)}</tr></thead>
<tbody>${rows.map((cells) => html`<tr>${cells.map((cell) => html`<td>${cell}</td>`)}</tr>`)}</tbody></table>`;
  return html`<section id="${id}" data-rows="${rows.length}"><h2>${title}</h2>${content}</section>`;
}

function traceCell(template: string | undefined, traceId: string | undefined): HtmlValue {
  const href = traceLink(template, traceId);
  if (href !== undefined) return html`<a href="${href}" rel="noreferrer noopener" target="_blank"><code>${traceId!.slice(0, 8)}…</code></a>`;
  return traceId === undefined ? '' : html`<code>${traceId}</code>`;
}

function traceOf(origin: RoutingSnapshot | undefined): string | undefined {
  const traceId: unknown = origin?.origin?.traceId;
  return typeof traceId === 'string' ? traceId : undefined;
}

function originOf(origin: RoutingSnapshot | undefined): HtmlValue {
  const session: unknown = origin?.session;
  if (typeof session !== 'object' || session === null) return '';
  const { platform, chatId, threadId } = session as Partial<Destination>;
  return typeof platform === 'string' && typeof chatId === 'string' ? where({ platform, chatId, ...(typeof threadId === 'string' ? { threadId } : {}) }) : '';
}

function where(destination: RoutingView | Destination): string {
  return `${destination.platform}:${destination.chatId ?? '?'}${destination.threadId === undefined ? '' : ` thread ${destination.threadId}`}`;
}

function iso(ms: number): string {
  return new Date(ms).toISOString().replace('T', ' ').slice(0, 19);
}

/** The first SHOWN_CHARS characters, never splitting a surrogate pair. */
function cut(text: string): string {
  const chars = [...text];
  return chars.length <= SHOWN_CHARS ? text : `${chars.slice(0, SHOWN_CHARS).join('')}…`;
}

