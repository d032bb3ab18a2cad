import { TRACE_ID_PLACEHOLDER } from '../gateway/operator-config.js';

const TRACE_ID = /^[0-9a-f]{32}$/;

/**
 * The trace UI's address of `traceId` (THREADLINE_TRACE_UI_URL with `{traceId}` replaced), or
 * undefined without a template or for an id that is not 32 hex digits (a damaged stored row).
 */
export function traceLink(template: string | undefined, traceId: string | undefined): string | undefined {
  if (template === undefined || traceId === undefined || !TRACE_ID.test(traceId) || /^0+$/.test(traceId)) return undefined;
  return template.replaceAll(TRACE_ID_PLACEHOLDER, traceId);
}
