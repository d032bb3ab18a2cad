import type { WorkKind } from './findings.js';

/** What kind of work a root span is, by the names the gateway gives them. */
export function workKind(rootName: string): WorkKind {
  if (rootName === 'gateway.message') return 'turn';
  if (rootName.startsWith('terminal.')) return 'watcher';
  if (rootName.startsWith('cron.')) return 'cron run';
  if (rootName === 'gateway.deliver') return 'outbox retry';
  return 'other';
}
