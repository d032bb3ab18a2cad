/* What a forensic copy is called and carries: read back by src/forensics, which loads no SDK. */

/** The always-exported copy of a span its trace's sampler dropped; `threadline misroutes` reads it as the span it copies. */
export const FORENSIC_SPAN = 'threadline.forensic';

/** Attributes a forensic copy adds to those of the span it copies. */
export const FORENSIC_ATTRIBUTES = {
  /** Why it was kept: `misroute`, `failed` or `retry` (a later attempt after a failed one). */
  reason: 'threadline.forensic.reason',
  /** The copied span's name (gateway.deliver, cron.run, terminal.notify, …). */
  spanName: 'threadline.forensic.span_name',
  /** The ids of the copied span, in the trace that was not sampled (logs carry that trace id). */
  traceId: 'threadline.forensic.trace_id',
  spanId: 'threadline.forensic.span_id',
} as const;

export type ForensicReason = 'misroute' | 'failed' | 'retry';

/** The link from a forensic copy to the span it copies, as its attribute `threadline.link` says. */
export const SAMPLED_OUT_LINK = 'sampled out';
