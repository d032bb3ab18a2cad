import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { getEventListeners } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { context } from '@opentelemetry/api';
import { isTracingSuppressed } from '@opentelemetry/core';
import { afterEach, describe, expect, it } from 'vitest';
import { DeliveryError } from '../../src/errors.js';
import { HttpPoster } from '../../src/platforms/http-delivery.js';

let server: Server | undefined;
afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

async function serve(handler: Parameters<typeof createServer>[1]): Promise<URL> {
  server = createServer(handler);
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/deliveries`);
}

const options = { headers: { 'content-type': 'application/json' }, timeoutMs: 2000, signal: new AbortController().signal, what: 'test receiver' };

describe('HttpPoster', () => {
  it('resolves on 2xx', async () => {
    const url = await serve((_request, response) => response.end('{}'));
    await expect(new HttpPoster().post(url, '{}', options)).resolves.toBeUndefined();
  });

  it('resolves on 2xx with a body of any length, read to its end', async () => {
    const url = await serve((_request, response) => response.end('x'.repeat(1024 * 1024)));
    await expect(new HttpPoster().post(url, '{}', options)).resolves.toBeUndefined();
  });

  it('fails retryably, saying so, when no answer comes within timeoutMs', async () => {
    const url = await serve(() => {}); // never answers
    const started = performance.now();
    const error = await new HttpPoster().post(url, '{}', { ...options, timeoutMs: 200 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DeliveryError);
    expect((error as DeliveryError).retryable).toBe(true);
    expect((error as DeliveryError).message).toContain('no answer within 200 ms');
    expect(performance.now() - started).toBeLessThan(3000); // undici's timers tick about once a second
    server?.closeAllConnections();
  });

  it('stops when its signal aborts (the gateway stopping), as a retryable failure', async () => {
    const url = await serve(() => {});
    const stopping = new AbortController();
    const pending = new HttpPoster().post(url, '{}', { ...options, signal: stopping.signal }).catch((e: unknown) => e);
    setTimeout(() => stopping.abort(new Error('the gateway is stopping')), 50);
    const error = (await pending) as DeliveryError;
    expect(error).toBeInstanceOf(DeliveryError);
    expect(error.retryable).toBe(true);
    expect(error.message).toContain('the gateway is stopping');
    server?.closeAllConnections();
  });

  it('aborts every post in flight on its signal through one listener, and each fails retryably', async () => {
    const url = await serve(() => {});
    const stopping = new AbortController();
    const poster = new HttpPoster();
    const pending = Array.from({ length: 5 }, () => poster.post(url, '{}', { ...options, signal: stopping.signal }).catch((e: unknown) => e));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(getEventListeners(stopping.signal, 'abort')).toHaveLength(1);
    stopping.abort(new Error('the gateway is stopping'));
    const errors = (await Promise.all(pending)) as DeliveryError[];
    expect(errors.map((error) => [error instanceof DeliveryError, error.retryable, error.message.includes('the gateway is stopping')])).toEqual(
      Array.from({ length: 5 }, () => [true, true, true]),
    );
    server?.closeAllConnections();
  });

  it('aborts a post still waiting for a free connection, which then never goes out', async () => {
    let requests = 0;
    const url = await serve(() => void requests++); // never answers: the pool's 256 connections stay busy
    const stopping = new AbortController();
    const poster = new HttpPoster();
    const pending = Array.from({ length: 257 }, () => poster.post(url, '{}', { ...options, signal: stopping.signal }).catch((e: unknown) => e));
    while (requests < 256) await new Promise((resolve) => setTimeout(resolve, 10));
    stopping.abort(new Error('the gateway is stopping'));
    const errors = (await Promise.all(pending)) as DeliveryError[];
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(errors.every((error) => error instanceof DeliveryError && error.retryable && error.message.includes('the gateway is stopping'))).toBe(true);
    expect(requests).toBe(256);
    server?.closeAllConnections();
  });

  it('fails an error answer once it has read enough of its body, without waiting for an endless one', async () => {
    const url = await serve((_request, response) => {
      response.writeHead(503, { 'retry-after': '7' });
      const timer = setInterval(() => response.write('busy '.repeat(200)), 20);
      response.on('close', () => clearInterval(timer));
    });
    const error = (await new HttpPoster().post(url, '{}', options).catch((e: unknown) => e)) as DeliveryError;
    expect([error instanceof DeliveryError, error.retryable, error.retryAfterMs]).toEqual([true, true, 7000]);
    expect(error.message).toBe(`test receiver answered 503: ${'busy '.repeat(60).slice(0, 300)}`);
    server?.closeAllConnections();
  });

  it('fails at once, retryably, when its signal is already aborted', async () => {
    let requests = 0;
    const url = await serve((_request, response) => {
      requests++;
      response.end('{}');
    });
    const error = (await new HttpPoster().post(url, '{}', { ...options, signal: AbortSignal.abort(new Error('stopped')) }).catch((e: unknown) => e)) as DeliveryError;
    expect([error instanceof DeliveryError, error.retryable, error.message]).toEqual([true, true, 'test receiver could not be reached: stopped']);
    expect(requests).toBe(0);
  });

  it('fails retryably when the answer is cut off after its headers, instead of hanging', async () => {
    const url = await serve((_request, response) => {
      response.writeHead(200, { 'content-length': '100' });
      response.write('partial');
      setTimeout(() => response.socket?.destroy(), 10);
    });
    const error = await new HttpPoster().post(url, '{}', options).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DeliveryError);
    expect((error as DeliveryError).retryable).toBe(true);
  });

  it('retries 5xx and 429 with their Retry-After, gives up on other 4xx', async () => {
    const statuses = [503, 429, 404];
    const url = await serve((_request, response) => {
      const status = statuses.shift()!;
      response.writeHead(status, status === 429 ? { 'retry-after': '7' } : {}).end('nope');
    });
    const poster = new HttpPoster();
    const [unavailable, limited, missing] = (await Promise.all(
      [0, 1, 2].map(async (i) => {
        await new Promise((resolve) => setTimeout(resolve, i * 30));
        return poster.post(url, '{}', options).catch((e: unknown) => e);
      }),
    )) as DeliveryError[];
    expect([unavailable!.retryable, limited!.retryable, missing!.retryable]).toEqual([true, true, false]);
    expect(limited!.retryAfterMs).toBe(7000);
    expect(missing!.message).toContain('404: nope');
  });

  it('reads a 2xx body to its end, so posts one after another share one keep-alive connection', async () => {
    let connections = 0;
    const url = await serve((_request, response) => response.end('{"ok":true}'));
    server!.on('connection', () => connections++);
    const poster = new HttpPoster();
    for (let i = 0; i < 3; i++) await poster.post(url, '{}', options);
    expect(connections).toBe(1);
  });

  it('creates its request where tracing is suppressed, so the undici instrumentation makes no second span', async () => {
    const suppressed: boolean[] = [];
    const onCreate = () => suppressed.push(isTracingSuppressed(context.active()));
    subscribe('undici:request:create', onCreate);
    try {
      const url = await serve((_request, response) => response.end('{}'));
      await new HttpPoster().post(url, '{}', options);
    } finally {
      unsubscribe('undici:request:create', onCreate);
    }
    expect(suppressed).toEqual([true]);
  });
});
