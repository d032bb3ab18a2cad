/**
 * Run by register.test.ts as a separate process, the way the gateway starts:
 * `node --import tsx --import ./src/telemetry/register.ts test/telemetry/register.fixture.ts`.
 * Enters the session in FIXTURE_SESSION, fetches FIXTURE_URL inside a span, then a server
 * of its own (whose inbound request must make no span), then POSTs to that server the way
 * a delivery does (its span is the client span; the request must make no other), flushes
 * the telemetry and prints what it saw as one JSON line.
 */
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { trace } from '@opentelemetry/api';
import { HttpPoster } from '../../src/platforms/http-delivery.js';
import { getSession, withSession, type SessionInput } from '../../src/session/index.js';
// The same module instance the --import loaded, so this shuts down the SDK that started.
import { telemetry } from '../../src/telemetry/register.js';

// Through require, as fastify loads it: the http instrumentation patches the CommonJS
// module, which an ESM named import of node:http does not see.
const { createServer } = createRequire(import.meta.url)('node:http') as typeof import('node:http');
const url = process.env['FIXTURE_URL'];
const input = process.env['FIXTURE_SESSION'];
if (url === undefined || input === undefined) throw new Error('FIXTURE_URL and FIXTURE_SESSION are required');

const seen = await withSession(JSON.parse(input) as SessionInput, () =>
  trace.getTracer('fixture').startActiveSpan('fixture.work', async (span) => {
    const response = await fetch(url);
    await response.text();
    const own = createServer((_request, answer) => answer.end('ok'));
    await new Promise<void>((resolve) => own.listen(0, '127.0.0.1', resolve));
    const ownUrl = `http://127.0.0.1:${(own.address() as AddressInfo).port}`;
    await (await fetch(`${ownUrl}/v1/health`)).text();
    await trace.getTracer('fixture').startActiveSpan('fixture.deliver', async (deliver) => {
      const options = { headers: {}, timeoutMs: 5000, signal: new AbortController().signal, what: 'own server' };
      await new HttpPoster().post(new URL(`${ownUrl}/deliveries`), '{}', options);
      deliver.end();
    });
    own.close();
    span.end();
    return { status: response.status, chatIdAfterFetch: getSession()?.chatId, exporter: telemetry.config.exporter };
  }),
);
await telemetry.shutdown();
process.stdout.write(`${JSON.stringify(seen)}\n`);
