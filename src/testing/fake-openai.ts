import type { IncomingHttpHeaders } from 'node:http';
import type {
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionCreateParams,
  ChatCompletionMessageParam,
} from '../agent/llm/model-types.js';
import { startLocalServer, type LocalRequest, type LocalResponse, type LocalServer } from './local-server.js';

/** One request the fake received: its JSON body and its headers (lowercase names). */
export interface FakeChatRequest {
  /** The Chat Completions request as sent: model, messages, tools, `stream`. */
  readonly body: ChatCompletionCreateParams;
  /** Including `traceparent`, `baggage` and `authorization`. */
  readonly headers: IncomingHttpHeaders;
}

/** What a script answers: a whole completion, as `FakeOpenAI.text()` and `FakeOpenAI.toolCalls()` build. */
export type FakeCompletion = ChatCompletion;

/**
 * An answer sent as a stream when the request asks for one (`stream: true`), piece by piece,
 * as `FakeOpenAI.streamed()` builds; a request without `stream` gets its completion whole.
 */
export interface FakeStreamedAnswer {
  readonly completion: FakeCompletion;
  /** The content in the pieces it is streamed in; they join to the completion's content. */
  readonly pieces: readonly string[];
  /**
   * Awaited before piece `index` is sent (`index === pieces.length`: before the tool calls and
   * the end): a test holds the stream here, or waits for what the pieces so far caused.
   */
  readonly before?: ((index: number) => void | Promise<void>) | undefined;
}

/** Answers each request; may wait (hold a request on a promise) before it does. */
export type FakeOpenAIScript = (request: FakeChatRequest) => FakeCompletion | FakeStreamedAnswer | Promise<FakeCompletion | FakeStreamedAnswer>;

/** Options of the answer helpers. */
export interface FakeAnswerOptions {
  /** Token counts reported in `usage`. Default: 10 in, 5 out. */
  readonly usage?: { readonly inputTokens: number; readonly outputTokens: number };
  /** Default: the request's model. */
  readonly model?: string;
  /** Default: `stop` for text, `tool_calls` for calls. */
  readonly finishReason?: ChatCompletion.Choice['finish_reason'];
}

/** A function call a tool-call answer makes. */
export interface FakeToolCall {
  readonly name: string;
  /** An object is sent as its JSON; a string is sent as it is (to test arguments that are not JSON). */
  readonly arguments?: Record<string, unknown> | string;
  /** Default: `call_<n>`, numbered in the order built. */
  readonly id?: string;
}

/** Requests kept in `requests`; older ones are dropped first. */
export const MAX_RECORDED_REQUESTS = 1_000;

const DEFAULT_USAGE = { inputTokens: 10, outputTokens: 5 };
let built = 0;

/**
 * A local OpenAI-compatible Chat Completions endpoint on 127.0.0.1, answering from a script,
 * for tests of code that calls a model (the LlmAgent, through the official `openai` package).
 *
 * ```ts
 * const model = await FakeOpenAI.start(({ body }) =>
 *   body.messages.at(-1)?.role === 'tool' ? FakeOpenAI.text('done') : FakeOpenAI.toolCalls([{ name: 'terminal', arguments: { command: 'ls' } }]),
 * );
 * // THREADLINE_LLM_BASE_URL=model.baseUrl
 * expect(model.requests[0]!.headers.traceparent).toBeDefined();
 * await model.close();
 * ```
 *
 * Like the real API it answers 400 to a conversation the API would refuse (a tool result
 * that answers no call, a call left without a result), and 401 to a wrong key when started
 * with `apiKey`. `POST /v1/chat/completions` is served, as a stream of server-sent events
 * when the request asks for one (`stream: true`: content in pieces, tool calls as deltas, usage
 * with `stream_options.include_usage`); anything else is 404.
 */
export class FakeOpenAI {
  /** Every request received (failed ones too), oldest first, up to MAX_RECORDED_REQUESTS. */
  readonly requests: FakeChatRequest[] = [];
  /** Streamed answers begun, finished (to `[DONE]`), and cut short because the client went away. */
  readonly streams = { started: 0, finished: 0, abandoned: 0 };
  private failures: { status: number; message: string }[] = [];

  private constructor(
    private readonly server: LocalServer,
    private readonly script: FakeOpenAIScript,
    private readonly apiKey: string | undefined,
  ) {}

  /**
   * Starts the server. `script` answers every request that is not made to fail; when it
   * throws, the request is answered 500 with its message. `apiKey`: requests must carry
   * `Authorization: Bearer <apiKey>`.
   */
  static async start(script: FakeOpenAIScript, options: { readonly apiKey?: string } = {}): Promise<FakeOpenAI> {
    let fake: FakeOpenAI | undefined;
    const server = await startLocalServer((request) => fake!.answer(request));
    fake = new FakeOpenAI(server, script, options.apiKey);
    return fake;
  }

  /** An answer in text, without tool calls: the end of a turn. */
  static text(content: string, options: FakeAnswerOptions = {}): FakeCompletion {
    return completion({ role: 'assistant', content, refusal: null }, options.finishReason ?? 'stop', options);
  }

  /** An answer that calls tools (with `content`, text said alongside them, if given). */
  static toolCalls(calls: readonly FakeToolCall[], options: FakeAnswerOptions & { readonly content?: string } = {}): FakeCompletion {
    const toolCalls = calls.map((call) => ({
      id: call.id ?? `call_${++built}`,
      type: 'function' as const,
      function: {
        name: call.name,
        arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments ?? {}),
      },
    }));
    return completion({ role: 'assistant', content: options.content ?? null, refusal: null, tool_calls: toolCalls }, options.finishReason ?? 'tool_calls', options);
  }

  /**
   * `completion` (from text() or toolCalls()) as a streamed answer: its content in `pieces`
   * (default: word by word), each awaited on `before(index)` first when given.
   */
  static streamed(
    completion: FakeCompletion,
    options: { readonly pieces?: readonly string[]; readonly before?: (index: number) => void | Promise<void> } = {},
  ): FakeStreamedAnswer {
    const content = completion.choices[0]?.message.content ?? '';
    const pieces = options.pieces ?? (content.match(/\S+\s*|\s+/g) ?? []);
    if (pieces.join('') !== content) throw new Error('FakeOpenAI.streamed: the pieces must join to the content');
    return { completion, pieces, before: options.before };
  }

  /** The base URL to configure (THREADLINE_LLM_BASE_URL): `http://127.0.0.1:<port>/v1`. */
  get baseUrl(): string {
    return `${this.server.origin}/v1`;
  }

  /**
   * The next `times` requests are answered `status` with an OpenAI-style error body, whatever
   * the script says. The openai package retries 408, 409, 429 and 5xx as its client is told
   * to (the LlmAgent: once), so fail twice to see a request fail.
   */
  failNext(status: number, times = 1, message = `fake failure ${status}`): void {
    for (let i = 0; i < times; i++) this.failures.push({ status, message });
  }

  /** The user's text of a recorded request: its last user message. */
  static lastUserText(request: FakeChatRequest): string | undefined {
    const user = request.body.messages.filter((message) => message.role === 'user').at(-1);
    return typeof user?.content === 'string' ? user.content : undefined;
  }

  close(): Promise<void> {
    return this.server.close();
  }

  private async answer(request: LocalRequest): Promise<LocalResponse> {
    if (request.method !== 'POST' || request.path !== '/v1/chat/completions') {
      return errorResponse(404, `Unknown request URL: ${request.method} ${request.path}`, 'invalid_request_error');
    }
    let body: ChatCompletionCreateParams;
    try {
      body = JSON.parse(request.body) as ChatCompletionCreateParams;
    } catch {
      return errorResponse(400, 'We could not parse the JSON body of your request.', 'invalid_request_error');
    }
    const recorded: FakeChatRequest = { body, headers: request.headers };
    this.requests.push(recorded);
    if (this.requests.length > MAX_RECORDED_REQUESTS) this.requests.shift();
    const failure = this.failures.shift();
    if (failure !== undefined) return errorResponse(failure.status, failure.message, 'server_error');
    if (this.apiKey !== undefined && request.headers.authorization !== `Bearer ${this.apiKey}`) {
      // Quoted back, as providers do (masked or not): a test can check it goes no further.
      const given = (request.headers.authorization ?? '').replace(/^Bearer /, '');
      return errorResponse(401, `Incorrect API key provided: ${given}.`, 'invalid_request_error', 'invalid_api_key');
    }
    const problem = typeof body.model !== 'string' || !Array.isArray(body.messages) ? 'model and messages are required' : conversationProblem(body.messages);
    if (problem !== undefined) return errorResponse(400, problem, 'invalid_request_error');
    const scripted = await this.script(recorded);
    const streamed: FakeStreamedAnswer = 'pieces' in scripted ? scripted : { completion: scripted, pieces: splitContent(scripted) };
    const answer = { ...streamed.completion, model: streamed.completion.model === '' ? body.model : streamed.completion.model };
    if (body.stream !== true) return { status: 200, body: answer };
    const includeUsage = body.stream_options?.include_usage === true;
    return {
      status: 200,
      headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' },
      stream: (closed) => this.events({ ...streamed, completion: answer }, includeUsage, closed),
    };
  }

  /** The server-sent events of a streamed answer: `data: <chunk>` lines, then `data: [DONE]`. */
  private async *events(answer: FakeStreamedAnswer, includeUsage: boolean, closed: AbortSignal): AsyncGenerator<string> {
    this.streams.started++;
    const done = () => closed.aborted;
    try {
      const { completion } = answer;
      const choice = completion.choices[0]!;
      const chunk = (delta: ChatCompletionChunk.Choice['delta'], finish: ChatCompletionChunk.Choice['finish_reason'] = null): string =>
        sse({ id: completion.id, object: 'chat.completion.chunk', created: completion.created, model: completion.model, choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }] });
      yield chunk({ role: 'assistant', content: '' });
      for (const [index, piece] of answer.pieces.entries()) {
        if (!(await untilClosed(answer.before?.(index), closed)) || done()) return;
        yield chunk({ content: piece });
      }
      if (!(await untilClosed(answer.before?.(answer.pieces.length), closed)) || done()) return;
      for (const [index, call] of (choice.message.tool_calls ?? []).entries()) {
        if (call.type !== 'function') continue;
        const args = call.function.arguments;
        const half = Math.ceil(args.length / 2);
        yield chunk({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.function.name, arguments: args.slice(0, half) } }] });
        yield chunk({ tool_calls: [{ index, function: { arguments: args.slice(half) } }] });
      }
      yield chunk({}, choice.finish_reason);
      if (includeUsage && completion.usage !== undefined) {
        yield sse({ id: completion.id, object: 'chat.completion.chunk', created: completion.created, model: completion.model, choices: [], usage: completion.usage });
      }
      yield 'data: [DONE]\n\n';
      this.streams.finished++;
    } finally {
      if (closed.aborted) this.streams.abandoned++;
    }
  }
}

/** A whole completion's content as one piece (none when empty). */
function splitContent(completion: FakeCompletion): string[] {
  const content = completion.choices[0]?.message.content ?? '';
  return content === '' ? [] : [content];
}

function sse(data: unknown): string {
  return `data: ${JSON.stringify(data)}\n\n`;
}

/** Waits for `wait` unless the client goes away first: true when it may go on. */
async function untilClosed(wait: void | Promise<void>, closed: AbortSignal): Promise<boolean> {
  if (wait === undefined) return !closed.aborted;
  if (closed.aborted) return false;
  return new Promise<boolean>((resolve, reject) => {
    const onClose = () => resolve(false);
    closed.addEventListener('abort', onClose, { once: true });
    wait.then(
      () => {
        closed.removeEventListener('abort', onClose);
        resolve(!closed.aborted);
      },
      (error: unknown) => {
        closed.removeEventListener('abort', onClose);
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });
}

function completion(message: ChatCompletion.Choice['message'], finishReason: ChatCompletion.Choice['finish_reason'], options: FakeAnswerOptions): FakeCompletion {
  const usage = options.usage ?? DEFAULT_USAGE;
  return {
    id: `chatcmpl-fake-${++built}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    // Empty: filled with the request's model when answered.
    model: options.model ?? '',
    choices: [{ index: 0, message, finish_reason: finishReason, logprobs: null }],
    usage: { prompt_tokens: usage.inputTokens, completion_tokens: usage.outputTokens, total_tokens: usage.inputTokens + usage.outputTokens },
  };
}

/** What the real API would refuse in the order of messages, or undefined. */
function conversationProblem(messages: readonly ChatCompletionMessageParam[]): string | undefined {
  const open = new Set<string>();
  for (const [index, message] of messages.entries()) {
    if (message.role === 'tool') {
      if (!open.delete(message.tool_call_id)) {
        return `messages[${index}]: a message with role 'tool' must be a response to a preceding message with 'tool_calls'`;
      }
      continue;
    }
    if (open.size > 0) {
      return `messages[${index}]: an assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id' (missing: ${[...open].join(', ')})`;
    }
    if (message.role === 'assistant') for (const call of message.tool_calls ?? []) open.add(call.id);
  }
  return open.size === 0 ? undefined : `the last message's tool calls have no results (missing: ${[...open].join(', ')})`;
}

function errorResponse(status: number, message: string, type: string, code: string | null = null): LocalResponse {
  return { status, body: { error: { message, type, param: null, code } } };
}
