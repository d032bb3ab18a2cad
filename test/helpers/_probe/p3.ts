import { writeFileSync, mkdirSync } from 'node:fs';
import { FileSpanExporter } from '../../../src/telemetry/index.js';
import { pino } from 'pino';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
const l = pino({ redact: { paths: ['["chat.name"]', '*["chat.name"]', '"user.name"'], censor: 'R' } });
l.info({ 'chat.name': 'x', 'user.name': 'y', s: { 'chat.name': 'z' } });
const mem = new InMemorySpanExporter();
const p = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(mem)] });
p.getTracer('t').startSpan('x').end();
const spans = mem.getFinishedSpans();
process.on('uncaughtException', (e) => console.log('UNCAUGHT', e.message));
writeFileSync('/tmp/probe/afile', '');
try { new FileSpanExporter('/tmp/probe/afile/t.jsonl').export(spans, (r) => console.log('cb1', r.code)); } catch (e) { console.log('sync throw', (e as Error).message); }
mkdirSync('/tmp/probe/adir/t.jsonl', { recursive: true });
new FileSpanExporter('/tmp/probe/adir/t.jsonl').export(spans, (r) => console.log('cb2', r.code, r.error?.message));
