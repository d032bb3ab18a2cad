import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { stopGateway } from '../../src/gateway/stop-gateway.js';

function parts(close: () => Promise<void>) {
  const steps: string[] = [];
  const log: string[] = [];
  const gatewayTimeouts: number[] = [];
  return {
    steps,
    log,
    gatewayTimeouts,
    logger: pino({ level: 'error' }, { write: (line: string) => void log.push(line) }),
    stoppable: {
      platforms: [{ close }, {}],
      gateway: {
        stop: async (timeoutMs: number) => {
          gatewayTimeouts.push(timeoutMs);
          steps.push('gateway');
        },
      },
      server: { close: async () => void steps.push('server') },
      store: { close: async () => void steps.push('store') },
    },
  };
}

describe('stopGateway', () => {
  it('closes the platforms, then stops the pipeline with the time left, then the server and the store', async () => {
    const p = parts(async () => {
      await new Promise((resolve) => setTimeout(resolve, 100));
      p.steps.push('platform');
    });
    await stopGateway(p.stoppable, 1_000, p.logger);
    expect(p.steps).toEqual(['platform', 'gateway', 'server', 'store']);
    expect(p.gatewayTimeouts[0]).toBeLessThanOrEqual(920);
    expect(p.gatewayTimeouts[0]).toBeGreaterThan(500);
  });

  it('leaves a platform that cannot close within the deadline behind, says so, and stops the rest', async () => {
    const p = parts(() => new Promise(() => {}));
    const started = Date.now();
    const stopped = stopGateway(p.stoppable, 200, p.logger).then(() => Date.now() - started);
    const hung = new Promise((resolve) => setTimeout(resolve, 3_000, Number.POSITIVE_INFINITY));
    expect(await Promise.race([stopped, hung])).toBeLessThan(1_000);
    expect(p.steps).toEqual(['gateway', 'server', 'store']);
    expect(p.gatewayTimeouts).toEqual([0]);
    expect(p.log.join('')).toContain('did not close');
  });

  it('logs a platform that fails to close and stops the rest', async () => {
    const p = parts(() => Promise.reject(new Error('bot token revoked')));
    await stopGateway(p.stoppable, 1_000, p.logger);
    expect(p.steps).toEqual(['gateway', 'server', 'store']);
    expect(p.log.join('')).toContain('bot token revoked');
  });
});
