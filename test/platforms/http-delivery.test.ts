import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
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
});
