import { startLocalServer, parseBody, type LocalServer } from './local-server.js';

/** A chat.postMessage the fake Web API received. */
export interface SlackSent {
  readonly channel: string;
  readonly text: string;
  readonly threadTs: string | undefined;
}

/**
 * A local fake of the Slack Web API: records chat.postMessage calls and fails on request
 * (429 with Retry-After, 5xx, or an `ok: false` platform error). Point
 * THREADLINE_SLACK_API_URL at `apiUrl`.
 */
export class FakeSlack {
  readonly sent: SlackSent[] = [];
  private failures: ({ status: number; retryAfter?: number } | { error: string })[] = [];
  private nextTs = 1;

  private constructor(private readonly server: LocalServer) {}

  static async start(): Promise<FakeSlack> {
    let fake!: FakeSlack;
    const server = await startLocalServer((request) => fake.answer(request.path, parseBody(request)));
    fake = new FakeSlack(server);
    return fake;
  }

  get apiUrl(): string {
    return `${this.server.origin}/api/`;
  }

  /** The next `count` calls answer HTTP `status` (429 with Retry-After seconds). */
  failNext(count: number, status: number, retryAfter?: number): void {
    for (let i = 0; i < count; i++) this.failures.push(retryAfter === undefined ? { status } : { status, retryAfter });
  }

  /** The next call answers 200 with `{ok: false, error}`. */
  refuseNext(error: string): void {
    this.failures.push({ error });
  }

  close(): Promise<void> {
    return this.server.close();
  }

  private answer(path: string, body: Record<string, unknown>) {
    const failure = this.failures.shift();
    if (failure !== undefined && 'error' in failure) return { status: 200, body: { ok: false, error: failure.error } };
    if (failure !== undefined) {
      return {
        status: failure.status,
        headers: failure.retryAfter === undefined ? {} : { 'retry-after': String(failure.retryAfter) },
        body: { ok: false, error: 'failing_on_purpose' },
      };
    }
    if (path.endsWith('/chat.postMessage')) {
      this.sent.push({
        channel: String(body['channel']),
        text: String(body['text']),
        threadTs: body['thread_ts'] === undefined ? undefined : String(body['thread_ts']),
      });
      return { status: 200, body: { ok: true, channel: body['channel'], ts: `${Date.now()}.${String(this.nextTs++).padStart(6, '0')}` } };
    }
    return { status: 200, body: { ok: true } };
  }
}
