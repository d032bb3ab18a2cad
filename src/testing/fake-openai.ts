import type { IncomingHttpHeaders } from 'node:http';
import type {
  ChatCompletion,
  ChatCompletionCreateParamsNonStreaming,
  ChatCompletionMessageParam,
} from '../agent/llm/model-types.js';
import { startLocalServer, type LocalRequest, type LocalResponse, type LocalServer } from './local-server.js';

/** One request the fake received: its JSON body and its headers (lowercase names). */
export interface FakeChatRequest {
  /** The Chat Completions request as sent: model, messages, tools. */
  readonly body: ChatCompletionCreateParamsNonStreaming;
  /** Including `traceparent`, `baggage` and `authorization`. */
  readonly headers: IncomingHttpHeaders;
}

/** What a script answers: a whole completion, as `FakeOpenAI.text()` and `FakeOpenAI.toolCalls()` build. */
export type FakeCompletion = ChatCompletion;

/** Answers each request; may wait (hold a request on a promise) before it does. */
export type FakeOpenAIScript = (request: FakeChatRequest) => FakeCompletion | Promise<FakeCompletion>;

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
 * with `apiKey`. Only non-streaming `POST /v1/chat/completions` is served; anything else is 404.
 */
export class FakeOpenAI {
  /** Every request received (failed ones too), oldest first, up to MAX_RECORDED_REQUESTS. */
  readonly requests: FakeChatRequest[] = [];
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
    let body: ChatCompletionCreateParamsNonStreaming;
    try {
      body = JSON.parse(request.body) as ChatCompletionCreateParamsNonStreaming;
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
    const answer = await this.script(recorded);
    return { status: 200, body: { ...answer, model: answer.model === '' ? body.model : answer.model } };
  }
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
