import { parseFormBody, type FormValue } from './fake-telegram.js';
import { startLocalServer, type LocalRequest, type LocalServer } from './local-server.js';

/** A chat.postMessage the fake Web API received. */
export interface SlackSent {
  readonly channel: string;
  readonly text: string;
  readonly threadTs: string | undefined;
  /** The ts the fake gave the message. */
  readonly ts?: string;
  /** The button of its blocks (a CommandButton), when it has one. */
  readonly button?: { readonly text: string; readonly value: string; readonly actionId: string } | undefined;
}

/** An assistant.threads.setStatus the fake Web API received. */
export interface SlackStatus {
  readonly channel: string;
  readonly threadTs: string;
  readonly status: string;
}

/** A chat.update the fake Web API took. */
export interface SlackUpdate {
  readonly channel: string;
  readonly ts: string;
  readonly text: string;
}

/** A message as the channel shows it now: as posted, or as last updated. */
export interface SlackMessage {
  readonly channel: string;
  readonly ts: string;
  readonly threadTs: string | undefined;
  readonly text: string;
}

/** A file shared into a channel through files.getUploadURLExternal, the upload and files.completeUploadExternal. */
export interface SlackFileSent {
  readonly channel: string;
  readonly threadTs: string | undefined;
  readonly initialComment: string | undefined;
  readonly filename: string;
  readonly bytes: Buffer;
}

/**
 * A local fake of the Slack Web API: records chat.postMessage calls and file uploads (the
 * upload URL it hands out points back to itself, on 127.0.0.1), and fails on request (429
 * with Retry-After, 5xx, or an `ok: false` platform error). Point THREADLINE_SLACK_API_URL
 * at `apiUrl`.
 */
export class FakeSlack {
  readonly sent: SlackSent[] = [];
  /** Files completed into a channel, in order. */
  readonly files: SlackFileSent[] = [];
  /** Thread statuses set ("is typing…"), in order; failNext leaves these calls alone. */
  readonly statuses: SlackStatus[] = [];
  /** Messages updated (chat.update), in order. */
  readonly updates: SlackUpdate[] = [];
  /** Posted messages by ts, as last updated. */
  private readonly messages = new Map<string, SlackMessage>();
  /** Every Web API method called (`chat.postMessage`, `assistant.threads.setStatus`, …), in order. */
  readonly calls: string[] = [];
  /** Upload URLs handed out, by file id: the filename asked for, and the bytes once uploaded. */
  private readonly uploads = new Map<string, { filename: string; length: number; bytes?: Buffer }>();
  private nextFileId = 1;
  private uploadFailures: number[] = [];
  private failures: ({ status: number; retryAfter?: number } | { error: string })[] = [];
  private nextTs = 1;

  private constructor(private readonly server: LocalServer) {}

  static async start(): Promise<FakeSlack> {
    let fake!: FakeSlack;
    const server = await startLocalServer((request) => fake.answer(request, parseFormBody(request)));
    fake = new FakeSlack(server);
    return fake;
  }

  get apiUrl(): string {
    return `${this.server.origin}/api/`;
  }

  /** The messages of a channel (and thread, when given) as Slack shows them now, oldest first: updates applied. */
  messagesIn(channel: string, threadTs?: string): SlackMessage[] {
    return [...this.messages.values()].filter((message) => message.channel === channel && (threadTs === undefined || message.threadTs === threadTs));
  }

  /** Deletes a message as a user could: updating it fails from now on (`message_not_found`). */
  deleteMessage(ts: string): void {
    this.messages.delete(ts);
  }

  /** The next `count` calls answer HTTP `status` (429 with Retry-After seconds). */
  failNext(count: number, status: number, retryAfter?: number): void {
    for (let i = 0; i < count; i++) this.failures.push(retryAfter === undefined ? { status } : { status, retryAfter });
  }

  /** The next `count` uploads of file bytes (to the upload URL, after files.getUploadURLExternal) answer HTTP `status`. */
  failUploadNext(count: number, status: number): void {
    for (let i = 0; i < count; i++) this.uploadFailures.push(status);
  }

  /** The next call answers 200 with `{ok: false, error}`. */
  refuseNext(error: string): void {
    this.failures.push({ error });
  }

  /**
   * The interaction payload Slack posts to the Interactivity Request URL when user `userId`
   * presses the button of the message posted as `ts` (TestGateway.sendSlackInteraction posts it).
   */
  buttonPress(ts: string, userId: string): Record<string, unknown> {
    const sent = this.sent.find((message) => message.ts === ts);
    if (sent?.button === undefined) throw new Error(`Message ${ts} has no button to press`);
    const actionTs = `${Date.now() / 1000}${String(this.nextTs++).padStart(3, '0')}`;
    return {
      type: 'block_actions',
      user: { id: userId },
      channel: { id: sent.channel },
      container: { type: 'message', message_ts: ts, channel_id: sent.channel, ...(sent.threadTs === undefined ? {} : { thread_ts: sent.threadTs }) },
      message: { ts, text: sent.text, ...(sent.threadTs === undefined ? {} : { thread_ts: sent.threadTs }) },
      actions: [{ type: 'button', action_id: sent.button.actionId, value: sent.button.value, action_ts: actionTs }],
    };
  }

  close(): Promise<void> {
    return this.server.close();
  }

  private answer(request: LocalRequest, body: Record<string, unknown>) {
    const { path } = request;
    if (path.startsWith('/api/')) this.calls.push(path.slice('/api/'.length));
    if (path.endsWith('/assistant.threads.setStatus')) {
      this.statuses.push({ channel: String(body['channel_id']), threadTs: String(body['thread_ts']), status: String(body['status']) });
      return { status: 200, body: { ok: true } };
    }
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
      const ts = `${Date.now()}.${String(this.nextTs++).padStart(6, '0')}`;
      const button = buttonOf(body['blocks']);
      this.sent.push({
        channel: String(body['channel']),
        text: String(body['text']),
        threadTs: body['thread_ts'] === undefined ? undefined : String(body['thread_ts']),
        ...(button === undefined ? {} : { ts, button }),
      });
      this.messages.set(ts, { channel: String(body['channel']), ts, threadTs: body['thread_ts'] === undefined ? undefined : String(body['thread_ts']), text: String(body['text']) });
      return { status: 200, body: { ok: true, channel: body['channel'], ts } };
    }
    if (path.endsWith('/chat.update')) {
      const ts = String(body['ts']);
      const message = this.messages.get(ts);
      if (message === undefined || message.channel !== String(body['channel'])) return { status: 200, body: { ok: false, error: 'message_not_found' } };
      this.messages.set(ts, { ...message, text: String(body['text']) });
      this.updates.push({ channel: message.channel, ts, text: String(body['text']) });
      return { status: 200, body: { ok: true, channel: message.channel, ts, text: body['text'] } };
    }
    if (path.endsWith('/files.getUploadURLExternal')) {
      const fileId = `F${String(this.nextFileId++).padStart(8, '0')}`;
      this.uploads.set(fileId, { filename: String(body['filename']), length: Number(body['length']) });
      return { status: 200, body: { ok: true, upload_url: `${this.server.origin}/upload/${fileId}`, file_id: fileId } };
    }
    if (path.startsWith('/upload/')) return this.receiveUpload(path.slice('/upload/'.length), request, body);
    if (path.endsWith('/files.completeUploadExternal')) return this.completeUpload(body);
    return { status: 200, body: { ok: true } };
  }

  /** The file's bytes, raw or as the one file of a multipart form (how @slack/web-api sends them). */
  private receiveUpload(fileId: string, request: LocalRequest, body: Record<string, unknown>) {
    const upload = this.uploads.get(fileId);
    if (upload === undefined) return { status: 404, body: 'no such upload' };
    const failure = this.uploadFailures.shift();
    if (failure !== undefined) return { status: failure, body: 'failing on purpose' };
    const part = Object.values(body).find((value): value is Exclude<FormValue, string> => typeof value === 'object' && value !== null && 'bytes' in value);
    const bytes = (request.headers['content-type'] ?? '').includes('multipart/form-data') ? part?.bytes : request.raw;
    if (bytes === undefined || bytes.length !== upload.length) return { status: 400, body: `expected ${upload.length} bytes` };
    upload.bytes = bytes;
    return { status: 200, body: `OK - ${bytes.length}` };
  }

  private completeUpload(body: Record<string, unknown>) {
    const files = JSON.parse(String(body['files'] ?? '[]')) as { id: string; title?: string }[];
    const uploaded = files.map((file) => ({ id: file.id, upload: this.uploads.get(file.id) }));
    if (uploaded.length === 0 || uploaded.some(({ upload }) => upload?.bytes === undefined)) {
      return { status: 200, body: { ok: false, error: 'file_not_found' } };
    }
    for (const { id, upload } of uploaded) {
      this.uploads.delete(id);
      this.files.push({
        channel: String(body['channel_id']),
        threadTs: body['thread_ts'] === undefined ? undefined : String(body['thread_ts']),
        initialComment: body['initial_comment'] === undefined ? undefined : String(body['initial_comment']),
        filename: upload!.filename,
        bytes: upload!.bytes!,
      });
    }
    return { status: 200, body: { ok: true, files: files.map((file) => ({ id: file.id, title: file.title ?? '' })) } };
  }
}

/** The first button of an actions block (blocks arrive as JSON text in a form, as an array in JSON). */
function buttonOf(raw: unknown): SlackSent['button'] {
  const blocks = (typeof raw === 'string' ? JSON.parse(raw) : raw) as { type?: string; elements?: { type?: string; action_id?: string; value?: string; text?: { text?: string } }[] }[] | undefined;
  const button = blocks?.find((block) => block.type === 'actions')?.elements?.find((element) => element.type === 'button');
  return button === undefined ? undefined : { text: String(button.text?.text), value: String(button.value), actionId: String(button.action_id) };
}
