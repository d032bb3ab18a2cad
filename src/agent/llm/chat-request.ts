import { SpanKind, type Attributes } from '@opentelemetry/api';
import { APIConnectionTimeoutError, APIUserAbortError } from 'openai';
import type OpenAI from 'openai';
import { ThreadlineError } from '../../errors.js';
import { recordFailure } from '../../session/index.js';
import { threadlineTracer } from '../../telemetry/tracer.js';
import { llmErrorType, llmFailure, type FailureContext } from './llm-failure.js';
import type { ChatCompletion, ChatCompletionCreateParamsNonStreaming } from './model-types.js';

const tracer = threadlineTracer();

/** Host and port of the model endpoint, for `server.address` and `server.port`. */
export interface ModelServer {
  readonly address: string;
  readonly port: number;
}

/** The host and port a base URL names, the scheme's default port when it names none. */
export function modelServer(baseUrl: string): ModelServer {
  const url = new URL(baseUrl);
  const port = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
  // A bracketed IPv6 host is reported without its brackets, as server.address expects.
  return { address: url.hostname.replace(/^\[(.*)\]$/, '$1'), port };
}

/**
 * One model request in a `chat <model>` span (kind CLIENT, GenAI semantic conventions):
 * request model, response model and id, finish reasons and token usage. No message content
 * and no key. The span is active while the request is sent, so the request carries its
 * traceparent. The answer is streamed: `onText` gets its text as written so far (the whole
 * snapshot, each time a piece arrives); the completion assembled from the stream resolves at
 * its end. Throws TL_LLM_FAILED, with `error.type` on the span (`cancelled` when `signal`
 * aborted it: the stream stops there).
 */
export function requestChat(
  client: OpenAI,
  server: ModelServer,
  params: ChatCompletionCreateParamsNonStreaming,
  signal: AbortSignal,
  failure: FailureContext,
  onText?: (snapshot: string) => void,
): Promise<ChatCompletion> {
  const attributes: Attributes = {
    'gen_ai.operation.name': 'chat',
    'gen_ai.provider.name': 'openai',
    'gen_ai.request.model': params.model,
    'server.address': server.address,
    'server.port': server.port,
  };
  return tracer.startActiveSpan(`chat ${params.model}`, { kind: SpanKind.CLIENT, attributes }, async (span) => {
    // The client's own timeout ends at the response's headers, which a stream sends at once: this
    // one bounds the whole answer, so a model that stalls mid-stream cannot hold its chat.
    const deadline = AbortSignal.timeout(failure.timeoutMs);
    try {
      const stream = client.chat.completions.stream({ ...params, stream: true, stream_options: { include_usage: true } }, { signal: AbortSignal.any([signal, deadline]) });
      if (onText !== undefined) {
        stream.on('content', (_delta, snapshot) => {
          // Nothing shown after a stop, even from a piece already received.
          if (!signal.aborted) onText(snapshot);
        });
      }
      const completion = (await stream.finalChatCompletion().catch((error: unknown) => {
        throw deadline.aborted && !signal.aborted ? new APIConnectionTimeoutError() : error;
      })) as ChatCompletion;
      // The stream helper ends quietly on some aborts; a stopped request is never an answer.
      if (signal.aborted) throw new APIUserAbortError();
      if (deadline.aborted) throw new APIConnectionTimeoutError();
      span.setAttributes(responseAttributes(completion));
      if (completion.choices?.[0]?.message === undefined) {
        throw new ThreadlineError('TL_LLM_FAILED', 'The model endpoint answered without a message (no choices); is THREADLINE_LLM_BASE_URL a Chat Completions API?');
      }
      return completion;
    } catch (error) {
      const failed = llmFailure(error, failure);
      span.setAttribute('error.type', llmErrorType(error));
      recordFailure(span, failed);
      throw failed;
    } finally {
      span.end();
    }
  });
}

function responseAttributes(completion: ChatCompletion): Attributes {
  const attributes: Attributes = {
    'gen_ai.response.finish_reasons': (completion.choices ?? []).map((choice) => String(choice.finish_reason)),
  };
  if (typeof completion.model === 'string') attributes['gen_ai.response.model'] = completion.model;
  if (typeof completion.id === 'string') attributes['gen_ai.response.id'] = completion.id;
  if (typeof completion.usage?.prompt_tokens === 'number') attributes['gen_ai.usage.input_tokens'] = completion.usage.prompt_tokens;
  if (typeof completion.usage?.completion_tokens === 'number') attributes['gen_ai.usage.output_tokens'] = completion.usage.completion_tokens;
  return attributes;
}
