import type { Update } from 'grammy/types';
import { startLocalServer, parseBody, type LocalRequest, type LocalServer } from './local-server.js';

/** A sendMessage the fake Bot API received. */
export interface TelegramSent {
  /** The id the fake gave the message. */
  readonly messageId: string;
  readonly chatId: string;
  readonly text: string;
  readonly threadId: string | undefined;
  readonly replyTo: string | undefined;
  /** The inline button under it (one row of one), when it has one. */
  readonly button?: { readonly text: string; readonly data: string } | undefined;
}

/** A sendChatAction the fake Bot API received. */
export interface TelegramAction {
  readonly chatId: string;
  readonly threadId: string | undefined;
  readonly action: string;
}

/** A sendMessageDraft the fake Bot API received. */
export interface TelegramDraft {
  readonly chatId: string;
  readonly threadId: string | undefined;
  readonly draftId: number;
  readonly text: string;
}

/** An editMessageText the fake Bot API received. */
export interface TelegramEdit {
  readonly chatId: string;
  readonly messageId: string;
  readonly text: string;
}

/** A text message as the chat shows it now: as sent, or as last edited. */
export interface TelegramMessage {
  readonly messageId: string;
  readonly chatId: string;
  readonly threadId: string | undefined;
  readonly text: string;
}

/** Any call the fake Bot API answered (getUpdates and getMe aside), in the order received. */
export interface TelegramCall {
  readonly method: string;
  readonly chatId: string;
  readonly threadId: string | undefined;
  readonly text: string | undefined;
}

/** Calls that `failNext` leaves alone unless named: the best-effort ones. */
const BEST_EFFORT_METHODS: ReadonlySet<string> = new Set(['getUpdates', 'getMe', 'sendChatAction', 'sendMessageDraft']);

/** A sendVoice or sendDocument the fake Bot API received (multipart), with the file's bytes. */
export interface TelegramFileSent {
  readonly method: 'sendVoice' | 'sendDocument';
  readonly chatId: string;
  readonly threadId: string | undefined;
  readonly replyTo: string | undefined;
  readonly caption: string | undefined;
  readonly filename: string;
  readonly bytes: Buffer;
}

/** A form field's value: text, or an uploaded file. */
export type FormValue = string | { readonly filename: string; readonly contentType: string; readonly bytes: Buffer };

/**
 * A request body as fields: multipart/form-data (files included) parsed here, otherwise JSON
 * or a URL-encoded form as parseBody reads them. Tolerant as the Bot API is: grammY writes
 * `content-disposition:form-data;name="x";filename=voice.ogg`, which WHATWG FormData refuses.
 */
export function parseFormBody(request: LocalRequest): Record<string, unknown> {
  const type = request.headers['content-type'] ?? '';
  const boundary = /multipart\/form-data.*;\s*boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(type);
  if (boundary === null) return parseBody(request);
  const fields: Record<string, FormValue> = {};
  const delimiter = Buffer.from(`--${boundary[1] ?? boundary[2]}`);
  let at = request.raw.indexOf(delimiter);
  while (at >= 0) {
    const start = at + delimiter.length;
    if (request.raw.subarray(start, start + 2).toString('latin1') === '--') break; // the closing delimiter
    const next = request.raw.indexOf(delimiter, start);
    if (next < 0) break;
    // A part: CRLF, its headers, a blank line, its bytes, CRLF before the next delimiter.
    const part = request.raw.subarray(start + 2, next - 2);
    const split = part.indexOf('\r\n\r\n');
    if (split >= 0) {
      const headers = part.subarray(0, split).toString('utf8');
      const content = part.subarray(split + 4);
      const name = /\bname=(?:"([^"]*)"|([^;\r\n]+))/i.exec(headers);
      const filename = /\bfilename=(?:"([^"]*)"|([^;\r\n]+))/i.exec(headers);
      const contentType = /^content-type:\s*(.+)$/im.exec(headers);
      if (name !== null) {
        fields[name[1] ?? name[2]!] =
          filename === null
            ? content.toString('utf8')
            : { filename: filename[1] ?? filename[2]!, contentType: contentType?.[1]?.trim() ?? 'application/octet-stream', bytes: Buffer.from(content) };
      }
    }
    at = next;
  }
  return fields;
}

/**
 * A local fake of the Telegram Bot API: records sendMessage calls, and sendVoice and
 * sendDocument uploads with their files; serves queued updates to getUpdates, and fails on
 * request. Point THREADLINE_TELEGRAM_API_ROOT at `apiRoot`.
 */
export class FakeTelegram {
  readonly sent: TelegramSent[] = [];
  /** Files sent, in order: voice notes (sendVoice) and documents (sendDocument). */
  readonly files: TelegramFileSent[] = [];
  /** Chat actions (`typing`) sent, in order. */
  readonly actions: TelegramAction[] = [];
  /** Drafts (sendMessageDraft) sent, in order. */
  readonly drafts: TelegramDraft[] = [];
  /** Edits of messages (editMessageText) that took, in order. */
  readonly edits: TelegramEdit[] = [];
  /** Every call but getUpdates and getMe, in order: sends, chat actions, drafts. */
  readonly calls: TelegramCall[] = [];
  /** Callback query ids answered (answerCallbackQuery), in order. */
  readonly answeredPresses: string[] = [];
  private nextQueryId = 1;
  private updates: Update[] = [];
  private failures: { code: number; retryAfter?: number; method?: string }[] = [];
  private nextMessageId = 1000;
  /** Text messages sent, by message id, as last edited. */
  private readonly texts = new Map<string, TelegramMessage>();

  private constructor(private readonly server: LocalServer) {}

  static async start(): Promise<FakeTelegram> {
    let fake!: FakeTelegram;
    const server = await startLocalServer((request) => fake.answer(request.path, parseFormBody(request)));
    fake = new FakeTelegram(server);
    return fake;
  }

  get apiRoot(): string {
    return this.server.origin;
  }

  /**
   * The next `count` API calls fail with `code` (429 carries retry_after seconds): calls of
   * `method` when named, otherwise any call but the best-effort ones (sendChatAction,
   * sendMessageDraft) and getUpdates.
   */
  failNext(count: number, code: number, retryAfter?: number, method?: string): void {
    for (let i = 0; i < count; i++) {
      this.failures.push({ code, ...(retryAfter === undefined ? {} : { retryAfter }), ...(method === undefined ? {} : { method }) });
    }
  }

  /** The text messages of a chat (and topic, when given) as it shows them now, oldest first: edits applied. */
  messagesIn(chatId: string, threadId?: string): TelegramMessage[] {
    return [...this.texts.values()].filter((message) => message.chatId === chatId && (threadId === undefined || message.threadId === threadId));
  }

  /** Deletes a message as a user could: editing it fails from now on (`message to edit not found`). */
  deleteMessage(messageId: string): void {
    this.texts.delete(messageId);
  }

  /**
   * The update Telegram sends when user `from` presses the button under sent message
   * `messageId`: post it to the webhook or queueUpdate it. Throws when the message has no button.
   */
  buttonPress(messageId: string, from: { readonly id: number; readonly username?: string }, options: { readonly updateId?: number; readonly chatType?: 'private' | 'group' | 'supergroup' } = {}): Update {
    const sent = this.sent.find((message) => message.messageId === messageId);
    if (sent?.button === undefined) throw new Error(`Message ${messageId} has no button to press`);
    const chatType = options.chatType ?? 'supergroup';
    return {
      update_id: options.updateId ?? 900_000 + this.nextQueryId,
      callback_query: {
        id: `q${this.nextQueryId++}`,
        from: { id: from.id, is_bot: false, first_name: from.username ?? 'user', ...(from.username === undefined ? {} : { username: from.username }) },
        chat_instance: '1',
        data: sent.button.data,
        message: {
          message_id: Number(messageId),
          date: 0,
          chat: chatType === 'private' ? { id: Number(sent.chatId), type: 'private', first_name: 'chat' } : { id: Number(sent.chatId), type: chatType, title: 'chat' },
          ...(sent.threadId === undefined ? {} : { message_thread_id: Number(sent.threadId), is_topic_message: true }),
          text: sent.text,
        },
      },
    } as Update;
  }

  /** Queues an update for the next getUpdates (long polling). */
  queueUpdate(update: Update): void {
    this.updates.push(update);
  }

  close(): Promise<void> {
    return this.server.close();
  }

  private answer(path: string, body: Record<string, unknown>) {
    const method = path.split('/').pop() ?? '';
    const at = this.failures.findIndex((failure) => (failure.method === undefined ? !BEST_EFFORT_METHODS.has(method) : failure.method === method));
    const failure = at < 0 ? undefined : this.failures.splice(at, 1)[0];
    if (method !== 'getUpdates' && method !== 'getMe') {
      this.calls.push({ method, chatId: String(body['chat_id']), threadId: threadOf(body), text: body['text'] === undefined ? undefined : String(body['text']) });
    }
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
        const messageId = String(this.nextMessageId);
        const button = buttonOf(body);
        this.sent.push({ messageId, chatId: String(body['chat_id']), text: String(body['text']), threadId: threadOf(body), replyTo: replyToOf(body), ...(button === undefined ? {} : { button }) });
        this.texts.set(messageId, { messageId, chatId: String(body['chat_id']), threadId: threadOf(body), text: String(body['text']) });
        return ok({ message_id: this.nextMessageId++, date: 0, chat: { id: Number(body['chat_id']), type: 'private' }, text: body['text'] });
      }
      case 'editMessageText': {
        const messageId = String(body['message_id']);
        const message = this.texts.get(messageId);
        if (message === undefined || message.chatId !== String(body['chat_id'])) return badRequest('Bad Request: message to edit not found');
        if (message.text === String(body['text'])) {
          return badRequest('Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message');
        }
        this.texts.set(messageId, { ...message, text: String(body['text']) });
        this.edits.push({ chatId: message.chatId, messageId, text: String(body['text']) });
        return ok({ message_id: Number(messageId), date: 0, chat: { id: Number(body['chat_id']), type: 'private' }, text: body['text'] });
      }
      case 'sendChatAction':
        this.actions.push({ chatId: String(body['chat_id']), threadId: threadOf(body), action: String(body['action']) });
        return ok(true);
      case 'sendMessageDraft': {
        const draftId = Number(body['draft_id']);
        if (!Number.isInteger(draftId) || draftId === 0) return badRequest('Bad Request: draft_id must be non-zero');
        this.drafts.push({ chatId: String(body['chat_id']), threadId: threadOf(body), draftId, text: String(body['text']) });
        return ok(true);
      }
      case 'sendVoice':
      case 'sendDocument': {
        // grammY names the part in the field (`attach://<part>`) and sends the file as that part.
        const named = body[method === 'sendVoice' ? 'voice' : 'document'];
        const file = typeof named === 'string' && named.startsWith('attach://') ? body[named.slice('attach://'.length)] : named;
        if (typeof file !== 'object' || file === null || !('bytes' in file)) {
          return { status: 400, body: { ok: false, error_code: 400, description: `Bad Request: ${method} needs a file uploaded as multipart/form-data` } };
        }
        const upload = file as Exclude<FormValue, string>;
        this.files.push({
          method,
          chatId: String(body['chat_id']),
          threadId: threadOf(body),
          replyTo: replyToOf(body),
          caption: body['caption'] === undefined ? undefined : String(body['caption']),
          filename: upload.filename,
          bytes: upload.bytes,
        });
        return ok({ message_id: this.nextMessageId++, date: 0, chat: { id: Number(body['chat_id']), type: 'private' } });
      }
      case 'answerCallbackQuery':
        this.answeredPresses.push(String(body['callback_query_id']));
        return ok(true);
      default:
        return ok(true);
    }
  }
}

/** The first button of reply_markup's inline keyboard (an object in JSON, a JSON string in a form). */
function buttonOf(body: Record<string, unknown>): { text: string; data: string } | undefined {
  const raw = body['reply_markup'] as { inline_keyboard?: { text: string; callback_data: string }[][] } | string | undefined;
  const markup = typeof raw === 'string' ? (JSON.parse(raw) as { inline_keyboard?: { text: string; callback_data: string }[][] }) : raw;
  const button = markup?.inline_keyboard?.[0]?.[0];
  return button === undefined ? undefined : { text: button.text, data: button.callback_data };
}

function threadOf(body: Record<string, unknown>): string | undefined {
  return body['message_thread_id'] === undefined ? undefined : String(body['message_thread_id']);
}

/** reply_parameters arrive as an object in JSON, as a JSON string in a form. */
function replyToOf(body: Record<string, unknown>): string | undefined {
  const reply = body['reply_parameters'] as { message_id?: number } | string | undefined;
  const replyTo = typeof reply === 'string' ? (JSON.parse(reply) as { message_id?: number }).message_id : reply?.message_id;
  return replyTo === undefined ? undefined : String(replyTo);
}

function badRequest(description: string) {
  return { status: 400, body: { ok: false, error_code: 400, description } };
}

function ok(result: unknown) {
  return { status: 200, body: { ok: true, result } };
}
