import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/errors.js';
import { startTestGateway, type TestGateway } from '../../../src/testing/index.js';
import { resolveRunAs } from '../../../src/tools/terminal/run-as.js';

const SESSION = { platform: 'webhook', chatId: 'ops', chatType: 'group', userId: 'boss' } as const;
/** What a command learns of the gateway: its own uid, and the gateway's starting environment. */
const PROBE = `id -u; cat /proc/${process.pid}/environ >/dev/null && echo ENVIRON-READ || echo ENVIRON-REFUSED`;

let gateway: TestGateway | undefined;
afterEach(async () => {
  await gateway?.stop();
  gateway = undefined;
});

describe('THREADLINE_TERMINAL_USER', () => {
  it('is refused unless the gateway can become that user, and for root itself', () => {
    expect(() => resolveRunAs('nobody', 1000)).toThrow(ConfigError);
    expect(() => resolveRunAs('root', 0)).toThrow(/names root/);
    expect(() => resolveRunAs('daemon', 0)).not.toThrow();
    expect(() => resolveRunAs('no-such-account-here', 0)).toThrow(/no account/);
    expect(() => resolveRunAs('a;b', 0)).toThrow(/not a user name/);
    expect(resolveRunAs('nobody', 0)).toMatchObject({ name: 'nobody', uid: 65534 });
  });

  it("without it a command reads the gateway's environment from /proc; with it, neither a foreground nor a background command can", async () => {
    const asRoot = process.getuid?.() === 0;
    gateway = await startTestGateway({ env: { THREADLINE_TERMINAL: '1' } });
    expect((await gateway.runTool('terminal', { command: PROBE }, SESSION)).text).toContain('ENVIRON-READ');
    await gateway.stop();
    gateway = undefined;
    if (!asRoot) {
      // Only root can run commands as another account: elsewhere the gateway refuses to start.
      await expect(startTestGateway({ env: { THREADLINE_TERMINAL: '1', THREADLINE_TERMINAL_USER: 'nobody' } })).rejects.toThrow(/THREADLINE_TERMINAL_USER/);
      return;
    }
    gateway = await startTestGateway({ env: { THREADLINE_TERMINAL: '1', THREADLINE_TERMINAL_USER: 'nobody' } });
    const dataDir = gateway.dataDir;
    const foreground = (await gateway.runTool('terminal', { command: `${PROBE}; echo "home=$HOME user=$USER"; ls ${dataDir} >/dev/null 2>&1 && echo STORE-LISTED || echo STORE-REFUSED` }, SESSION)).text;
    expect(foreground).toContain('STORE-REFUSED');
    expect(foreground).toContain('65534');
    expect(foreground).toContain('ENVIRON-REFUSED');
    expect(foreground).toContain('user=nobody');

    await gateway.runTool('terminal', { command: PROBE, background: true, notify_on_complete: true }, SESSION);
    await gateway.receiver.waitFor(1);
    const notice = gateway.receiver.received[0]!.body.text;
    expect(notice).toContain('65534');
    expect(notice).toContain('ENVIRON-REFUSED');
    await gateway.stop();
    gateway = undefined;

    // A data dir others may enter would hand them every chat: the gateway refuses to start on it.
    const open = mkdtempSync(join(tmpdir(), 'threadline-open-'));
    try {
      chmodSync(open, 0o755);
      await expect(startTestGateway({ env: { THREADLINE_TERMINAL: '1', THREADLINE_TERMINAL_USER: 'nobody', THREADLINE_DATA_DIR: open } })).rejects.toThrow(/open to others \(mode 755\)/);
    } finally {
      rmSync(open, { recursive: true, force: true });
    }
  });
});
