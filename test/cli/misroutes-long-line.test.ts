// A trace-file line too long to read is skipped and said on stderr, never a crash: the exit status still says found (1) or not (0).
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { SpanStatusCode } from '@opentelemetry/api';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { describe, expect, it } from 'vitest';
import { runThreadline } from '../../src/cli/threadline.js';
import { FileSpanExporter } from '../../src/telemetry/index.js';
import { useTempDir } from '../helpers/temp-dir.js';

const tempRoot = useTempDir('misroutes-long-line');
/** The smallest file cap the gateway takes: the command reads no longer line. */
const SMALL_CAP = { THREADLINE_TRACE_FILE_MAX_BYTES: String(64 * 1024) };
/** Three MiB without a newline, as a hostile or broken writer leaves it. */
const HUGE_LINE = `${'x'.repeat(3 * 1024 * 1024)}\n`;

async function run(argv: string[], env: NodeJS.ProcessEnv) {
  let out = '';
  let err = '';
  const code = await runThreadline(argv, { out: (text) => void (out += text), err: (text) => void (err += text), env });
  return { code, out, err };
}

/** A trace file holding one delivery to chat `a`, begun a minute ago; `failed`: its attempt failed and no send followed (lost). */
async function traceFile(name: string, failed: boolean): Promise<string> {
  const path = join(tempRoot(), name);
  const exporter = new FileSpanExporter(path);
  const provider = new BasicTracerProvider({ resource: resourceFromAttributes({ 'service.name': 'threadline' }), spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const span = provider.getTracer('test').startSpan('gateway.deliver', {
    startTime: Date.now() - 60_000,
    attributes: {
      'chat.platform': 'webhook',
      'chat.id': 'a',
      'delivery.id': 'd-1',
      'delivery.kind': 'reply',
      'delivery.target': 'origin',
      'routing.destination.platform': 'webhook',
      'routing.destination.chat.id': 'a',
      'routing.origin.platform': 'webhook',
      'routing.origin.chat.id': 'a',
    },
  });
  if (failed) {
    span.recordException({ name: 'DeliveryError', code: 'TL_DELIVERY_FAILED', message: 'receiver answered 503' });
    span.setStatus({ code: SpanStatusCode.ERROR, message: 'receiver answered 503' });
  }
  span.end(Date.now() - 59_000);
  await provider.shutdown();
  return path;
}

describe('threadline misroutes on a trace file with a line longer than it reads', () => {
  it('skips the line, names it on stderr, and exits 1 for what it found elsewhere', async () => {
    const path = await traceFile('found.jsonl', true);
    appendFileSync(path, HUGE_LINE);
    const { code, out, err } = await run(['misroutes', '--file', path, '--no-store', '--lost-after', '1ms'], SMALL_CAP);
    expect(out).toMatch(/^0 misroutes, 1 lost/m);
    expect(err).toBe(
      `threadline: skipped 1 line(s) longer than 64 KiB, the longest a trace-file line is read (THREADLINE_TRACE_FILE_MAX_BYTES, at most 256 MiB); ` +
        `their spans were not examined: ${path} line 2 (${HUGE_LINE.length - 1} bytes)\n`,
    );
    expect(code).toBe(1);
  });

  it('exits 0 when nothing is found beside the skipped line', async () => {
    const path = await traceFile('clean.jsonl', false);
    appendFileSync(path, HUGE_LINE);
    const { code, out, err } = await run(['misroutes', '--file', path, '--no-store', '--lost-after', '1ms'], SMALL_CAP);
    expect(out).toMatch(/^no misroutes, nothing lost/m);
    expect(err).toContain(`${path} line 2 (`);
    expect(code).toBe(0);
  });

  it('refuses a file cap it cannot read as a usage error (2), not as found', async () => {
    const path = await traceFile('bad-cap.jsonl', false);
    const { code, err } = await run(['misroutes', '--file', path, '--no-store'], { THREADLINE_TRACE_FILE_MAX_BYTES: 'lots' });
    expect(err).toContain('THREADLINE_TRACE_FILE_MAX_BYTES');
    expect(code).toBe(2);
  });
});
