import { describe, expect, it } from 'vitest';
import { scrubSecrets } from '../../src/config/scrub-secrets.js';

describe('scrubSecrets', () => {
  it('removes secret settings and exporter credentials, and leaves the rest', () => {
    const env: NodeJS.ProcessEnv = {
      PATH: '/bin',
      THREADLINE_TELEGRAM_BOT_TOKEN: '1:abc',
      THREADLINE_SLACK_SIGNING_SECRET: 's',
      THREADLINE_LLM_API_KEY: 'sk',
      OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer x',
      OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'x=y',
      OTEL_SERVICE_NAME: 'gw',
      THREADLINE_DATA_DIR: '/data',
    };
    expect(scrubSecrets(env).sort()).toEqual(
      ['OTEL_EXPORTER_OTLP_HEADERS', 'OTEL_EXPORTER_OTLP_TRACES_HEADERS', 'THREADLINE_LLM_API_KEY', 'THREADLINE_SLACK_SIGNING_SECRET', 'THREADLINE_TELEGRAM_BOT_TOKEN'].sort(),
    );
    expect(env).toEqual({ PATH: '/bin', OTEL_SERVICE_NAME: 'gw', THREADLINE_DATA_DIR: '/data' });
  });
});
