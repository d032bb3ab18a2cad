import { APIConnectionError, APIError } from 'openai';
import { describe, expect, it } from 'vitest';
import { llmErrorType, llmFailure } from '../../../src/agent/llm/llm-failure.js';

const context = { apiKey: 'plain-secret-key', timeoutMs: 1000 };

describe('llmFailure', () => {
  it('takes out the key, key-shaped text and URL secrets the provider quoted', () => {
    const quoted = APIError.generate(401, { error: { message: 'Bad key plain-secret-key (also sk-proj-abc***xyz) at https://u:p@h/x?token=1' } }, undefined, new Headers());
    const failure = llmFailure(quoted, context);
    expect(failure.code).toBe('TL_LLM_FAILED');
    expect(failure.message).toBe('The model endpoint answered 401 (Bad key <redacted> (also sk-<redacted>) at https://h/x); check THREADLINE_LLM_API_KEY');
    expect(failure.cause).toBeUndefined();
  });

  it('bounds the quoted provider text', () => {
    const long = APIError.generate(500, { error: { message: 'x'.repeat(5000) } }, undefined, new Headers());
    expect(llmFailure(long, context).message.length).toBeLessThan(400);
  });

  it('names a status, a connection failure and anything else in error.type', () => {
    expect(llmErrorType(APIError.generate(429, undefined, 'slow down', new Headers()))).toBe('429');
    expect(llmErrorType(new APIConnectionError({ message: 'refused' }))).toBe('connection_error');
    expect(llmErrorType(new TypeError('bug'))).toBe('_OTHER');
  });
});
