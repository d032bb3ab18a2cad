import OpenAI from 'openai';
import type { Logger } from 'pino';
import type { LlmConfig } from '../../tools/tools-config.js';
import { tracedFetch, type FetchFunction } from '../../telemetry/traced-fetch.js';

/**
 * The official client for THREADLINE_LLM_BASE_URL: one retry (a turn waits on it), the
 * configured timeout, and a fetch that propagates trace context and allowed baggage. The
 * package's own log goes to `logger` at warn and above, as bare messages: its details can
 * hold request headers. Organization and project are fixed to none, so OPENAI_* variables
 * of the host do not leak into requests to another provider.
 */
export function createModelClient(config: LlmConfig, logger: Logger, fetch: FetchFunction = tracedFetch()): OpenAI {
  const log = logger.child({ component: 'openai' });
  return new OpenAI({
    baseURL: config.baseUrl,
    apiKey: config.apiKey ?? 'unused',
    organization: null,
    project: null,
    timeout: config.timeoutMs,
    maxRetries: 1,
    fetch,
    logLevel: 'warn',
    logger: {
      error: (message: string) => log.error(message),
      warn: (message: string) => log.warn(message),
      info: (message: string) => log.info(message),
      debug: (message: string) => log.debug(message),
    },
  });
}
