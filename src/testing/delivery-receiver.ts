import type { IncomingHttpHeaders } from 'node:http';
import { startLocalServer, type LocalRequest, type LocalResponse, type LocalServer } from './local-server.js';
import type { WebhookDelivery } from '../platforms/webhook/webhook-schema.js';
import { basicAuthOf } from '../platforms/basic-auth.js';

/** What the gateway POSTs to THREADLINE_WEBHOOK_DELIVERY_URL, as its schema states it (an attachment's bytes in `attachment.data_base64`). */
export type WebhookDeliveryBody = WebhookDelivery;

export interface DeliveryReceiverOptions {
  /** Answer 401 to a request without this `Authorization: Basic` pair; `url` then carries it as `user:password@`. */
  readonly auth?: { readonly username: string; readonly password: string } | undefined;
}

export interface ReceivedDelivery {
  readonly body: WebhookDeliveryBody;
  readonly headers: IncomingHttpHeaders;
  /** The baggage header, decoded into key → value. */
  readonly baggage: Readonly<Record<string, string>>;
}

/**
 * A local stand-in for THREADLINE_WEBHOOK_DELIVERY_URL: records what the gateway delivers
 * and can be told to fail, to exercise retries. Listens on 127.0.0.1 only.
 */
export class DeliveryReceiver {
  readonly received: ReceivedDelivery[] = [];
  /** Every request, failed on purpose or not. */
  attempts = 0;
  private failures: { status: number; retryAfter?: string }[] = [];
  private failAll: number | undefined;
  private waiters: (() => void)[] = [];

  private constructor(
    private readonly server: LocalServer,
    private readonly auth: DeliveryReceiverOptions['auth'],
  ) {}

  static async start(options: DeliveryReceiverOptions = {}): Promise<DeliveryReceiver> {
    let receiver!: DeliveryReceiver;
    const server = await startLocalServer((request) => receiver.handle(request));
    receiver = new DeliveryReceiver(server, options.auth);
    return receiver;
  }

  /** The URL to set as THREADLINE_WEBHOOK_DELIVERY_URL; with `auth`, its credentials in it (`user:password@`). */
  get url(): string {
    if (this.auth === undefined) return `${this.server.origin}/deliveries`;
    const url = new URL(`${this.server.origin}/deliveries`);
    url.username = encodeURIComponent(this.auth.username);
    url.password = encodeURIComponent(this.auth.password);
    return url.href;
  }

  /** The next `count` requests fail with `status` (and Retry-After when given). */
  failNext(count: number, status = 503, retryAfter?: string): void {
    for (let i = 0; i < count; i++) this.failures.push(retryAfter === undefined ? { status } : { status, retryAfter });
  }

  /** Every request fails with `status` until failAll(undefined). */
  failEvery(status: number | undefined): void {
    this.failAll = status;
  }

  /** Deliveries by idempotency key: the gateway delivers at least once, so duplicates collapse here. */
  unique(): Map<string, ReceivedDelivery> {
    return new Map(this.received.map((delivery) => [delivery.body.idempotency_key, delivery]));
  }

  /** Resolves when `count` distinct deliveries have arrived; rejects after `timeoutMs`. */
  async waitFor(count: number, timeoutMs = 15_000): Promise<ReceivedDelivery[]> {
    const deadline = Date.now() + timeoutMs;
    while (this.unique().size < count) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`Expected ${count} deliveries, got ${this.unique().size} within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    return [...this.unique().values()];
  }

  close(): Promise<void> {
    return this.server.close();
  }

  private handle(request: LocalRequest): LocalResponse {
    this.attempts++;
    if (this.auth !== undefined && request.headers.authorization !== basicAuthOf(new URL(this.url))) {
      return { status: 401, headers: { 'www-authenticate': 'Basic realm="deliveries"' }, body: 'wrong or missing basic auth' };
    }
    const failure = this.failAll !== undefined ? { status: this.failAll } : this.failures.shift();
    if (failure !== undefined) {
      const retryAfter = 'retryAfter' in failure ? failure.retryAfter : undefined;
      return { status: failure.status, headers: retryAfter === undefined ? {} : { 'retry-after': retryAfter }, body: 'failing on purpose' };
    }
    let body: WebhookDeliveryBody;
    try {
      body = JSON.parse(request.body) as WebhookDeliveryBody;
    } catch {
      return { status: 400, body: 'not JSON' };
    }
    this.received.push({ body, headers: request.headers, baggage: parseBaggage(request.headers['baggage']) });
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
    return { status: 200, body: { ok: true } };
  }
}

function parseBaggage(header: string | string[] | undefined): Record<string, string> {
  const entries: Record<string, string> = {};
  for (const member of [header ?? []].flat().join(',').split(',')) {
    const [key, value] = member.split(';')[0]!.split('=');
    if (key && value !== undefined) entries[decodeURIComponent(key.trim())] = decodeURIComponent(value.trim());
  }
  return entries;
}
