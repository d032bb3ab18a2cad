/**
 * `npm start`. The gateway itself is not built yet; until it is, this boots telemetry,
 * proves that session routing reaches a span, says where that span went, and exits.
 */
import { trace } from '@opentelemetry/api';
import { withSession } from '../session/index.js';
import { describeExporter } from '../telemetry/index.js';
import { telemetry } from '../telemetry/register.js';

const tracer = trace.getTracer('threadline');
const traceId = withSession({ platform: 'webhook', chatType: 'dm', chatId: 'selfcheck' }, () =>
  tracer.startActiveSpan('threadline.selfcheck', (span) => {
    span.end();
    return span.spanContext().traceId;
  }),
);
await telemetry.shutdown();
console.log(
  `threadline: session-context core ready; the gateway is not built yet. ` +
    `Wrote self-check trace ${traceId} to ${describeExporter(telemetry.config)}.`,
);
