import { Writable } from 'node:stream';
import { createLogger } from '../../../src/telemetry/index.js';
import { FileSpanExporter } from '../../../src/telemetry/index.js';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
const lines: string[] = [];
const dest = new Writable({ write(chunk, _e, cb) { lines.push(String(chunk)); cb(); } });
const log = createLogger({ destination: dest as any });
log.info({ chatName: 'Secret', 'chat.name': 'Secret2', 'user.name': 'U', session: { chatName: 'S3', userName: 'S4' }, a: { b: { chatName: 'deep' } } }, 'hi');
setTimeout(async () => {
  console.log(lines);
  const mem = new InMemorySpanExporter();
  const p = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(mem)] });
  p.getTracer('t').startSpan('x').end();
  const spans = mem.getFinishedSpans();
  const fx = new FileSpanExporter('/tmp/probe/out/t.jsonl');
  fx.export(spans, (r) => console.log('export cb', r.code));
  const t = setTimeout(() => console.log('forceFlush HUNG'), 2000);
  await fx.forceFlush();
  clearTimeout(t);
  console.log('flushed');
  const bad = new FileSpanExporter('/proc/nope/t.jsonl');
  process.on('uncaughtException', (e) => console.log('UNCAUGHT', e.message));
  try { bad.export(spans, (r) => console.log('bad cb', r.code, r.error?.message)); } catch (e) { console.log('sync throw', (e as Error).message); }
  const bad2 = new FileSpanExporter('/tmp/probe/ro/t.jsonl');
  require('node:fs').mkdirSync('/tmp/probe/ro', {recursive: true}); require('node:fs').writeFileSync('/tmp/probe/ro/t.jsonl', ''); require('node:fs').chmodSync('/tmp/probe/ro/t.jsonl', 0o444);
  bad2.export(spans, (r) => console.log('bad2 cb', r.code, r.error?.message));
}, 50);
