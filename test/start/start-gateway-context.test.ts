import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { context } from '@opentelemetry/api';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { readGatewayConfig } from '../../src/gateway/gateway-config.js';
import { startGateway } from '../../src/start/start-gateway.js';
import { installContext } from '../../src/telemetry/install-context.js';
import { assertThreadlineError, rejectionOf } from '../helpers/errors.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('startGateway without a context manager', () => {
  it('throws TL_NO_CONTEXT_MANAGER before it opens, locks or listens on anything', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'threadline-no-context-'));
    dirs.push(dataDir);
    const config = readGatewayConfig({ THREADLINE_DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1' });
    context.disable();
    try {
      const error = assertThreadlineError(await rejectionOf(startGateway(config, { logger: pino({ level: 'silent' }) })), 'TL_NO_CONTEXT_MANAGER');
      expect(error.message).toMatch(/telemetry\/register/);
    } finally {
      installContext();
    }
    expect(readdirSync(dataDir)).toEqual([]);
  });
});
