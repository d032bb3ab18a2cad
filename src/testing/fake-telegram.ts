import type { Update } from 'grammy/types';
import { startLocalServer, parseBody, type LocalServer } from './local-server.js';

/** A sendMessage the fake Bot API received. */
export interface TelegramSent {
  readonly chatId: string;
  readonly text: string;
  readonly threadId: string | undefined;
  readonly replyTo: string | undefined;
}

/**
 * A local fake of the Telegram Bot API: records sendMessage calls, serves queued updates
 * to getUpdates, and fails on request. Point THREADLINE_TELEGRAM_API_ROOT at `apiRoot`.
 */
export class FakeTelegram {
  readonly sent: TelegramSent[] = [];
  private updates: Update[] = [];
  private failures: { code: number; retryAfter?: number }[] = [];
  private nextMessageId = 1000;

  private constructor(private readonly server: LocalServer) {}

  static async start(): Promise<FakeTelegram> {
    let fake!: FakeTelegram;
    const server = await startLocalServer((request) => fake.answer(request.path, parseBody(request)));
    fake = new FakeTelegram(server);
    return fake;
  }

  get apiRoot(): string {
    return this.server.origin;
  }

  /** The next `count` API calls fail with `code` (429 carries retry_after seconds). */
  failNext(count: number, code: number, retryAfter?: number): void {
    for (let i = 0; i < count; i++) this.failures.push(retryAfter === undefined ? { code } : { code, retryAfter });
  }

  /** Queues an update for the next getUpdates (long polling). */
  queueUpdate(update: Update): void {
    this.updates.push(update);
  }

  close(): Promise<void> {
    return this.server.close();
  }

  private answer(path: string, body: Record<string, unknown>) {
    const method = path.split('/').pop();
    const failure = method === 'getUpdates' ? undefined : this.failures.shift();
    if (failure !== undefined) {
      return {
        status: failure.code,
        body: {
          ok: false,
          error_code: failure.code,
          description: 'failing on purpose',
          ...(failure.retryAfter === undefined ? {} : { parameters: { retry_after: failure.retryAfter } }),
        },
      };
    }
    switch (method) {
      case 'getMe':
        return ok({ id: 1, is_bot: true, first_name: 'threadline', username: 'threadline_bot' });
      case 'getUpdates': {
        const offset = Number(body['offset'] ?? 0);
        const updates = this.updates.filter((update) => update.update_id >= offset);
        this.updates = updates;
        return ok(updates);
      }
      case 'sendMessage': {
        const reply = body['reply_parameters'] as { message_id?: number } | string | undefined;
        const replyTo = typeof reply === 'string' ? (JSON.parse(reply) as { message_id?: number }).message_id : reply?.message_id;
        this.sent.push({
          chatId: String(body['chat_id']),
          text: String(body['text']),
          threadId: body['message_thread_id'] === undefined ? undefined : String(body['message_thread_id']),
          replyTo: replyTo === undefined ? undefined : String(replyTo),
        });
        return ok({ message_id: this.nextMessageId++, date: 0, chat: { id: Number(body['chat_id']), type: 'private' }, text: body['text'] });
      }
      default:
        return ok(true);
    }
  }
}

function ok(result: unknown) {
  return { status: 200, body: { ok: true, result } };
}
