import { ConfigError } from '../errors.js';
import { readText } from '../config/read-setting.js';

/** The operator's page: who may see it, and where its trace links point. */
export interface OperatorConfig {
  /** THREADLINE_ADMIN_TOKEN; unset: the page answers loopback clients only. */
  readonly adminToken: string | undefined;
  /** THREADLINE_TRACE_UI_URL, holding `{traceId}`; unset: no links. */
  readonly traceUiUrl: string | undefined;
}

/** Shorter tokens can be guessed by whoever reaches the port: the page can retry any dead letter. */
export const MIN_ADMIN_TOKEN_CHARS = 32;
export const TRACE_ID_PLACEHOLDER = '{traceId}';

export function readOperatorConfig(env: NodeJS.ProcessEnv): OperatorConfig {
  const adminToken = readText(env, 'THREADLINE_ADMIN_TOKEN');
  if (adminToken !== undefined && adminToken.length < MIN_ADMIN_TOKEN_CHARS) {
    throw new ConfigError('THREADLINE_ADMIN_TOKEN', `is ${adminToken.length} characters: use ${MIN_ADMIN_TOKEN_CHARS} or more random ones (openssl rand -hex 32)`);
  }
  return { adminToken, traceUiUrl: traceUiUrlOf(readText(env, 'THREADLINE_TRACE_UI_URL')) };
}

function traceUiUrlOf(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (!value.includes(TRACE_ID_PLACEHOLDER)) {
    throw new ConfigError('THREADLINE_TRACE_UI_URL', `holds no ${TRACE_ID_PLACEHOLDER}: write where a trace is shown, e.g. https://jaeger.example.com/trace/${TRACE_ID_PLACEHOLDER}`);
  }
  let url: URL;
  try {
    url = new URL(value.replaceAll(TRACE_ID_PLACEHOLDER, '0'.repeat(32)));
  } catch {
    throw new ConfigError('THREADLINE_TRACE_UI_URL', 'is not a URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ConfigError('THREADLINE_TRACE_UI_URL', 'is not an http(s) URL');
  return value;
}
