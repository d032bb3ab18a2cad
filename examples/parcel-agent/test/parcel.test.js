import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { afterEach, describe, expect, it } from 'vitest';
import { DeliveryReceiver, FakeOpenAI, startTestGateway } from 'threadline/testing';
import { parcelAgent } from '../agent.js';
import { trackParcel } from '../tools/track-parcel.js';

const cleanups = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('the parcel agent', () => {
  it('the model calls track_parcel in the asking thread; the arrival is said there after a restart', async () => {
    const model = await FakeOpenAI.start((request) =>
      request.body.messages.at(-1).role === 'tool'
        ? FakeOpenAI.text('I will tell you.')
        : FakeOpenAI.toolCalls([{ name: 'track_parcel', arguments: { parcel: 'P42', minutes: 30 } }]),
    );
    cleanups.push(() => model.close());
    const gateway = await startTestGateway({ clock: 'manual', llmBaseUrl: model.baseUrl, tools: [trackParcel] });
    cleanups.push(() => gateway.stop());
    await gateway.send({ chat_id: 'family', thread_id: 'parcels', chat_type: 'group', text: 'where is P42? due in 30 min' });
    await gateway.receiver.waitFor(1);
    await gateway.restart();
    await gateway.advanceTime(30 * 60_000);
    const [answer, arrival] = await gateway.receiver.waitFor(2);
    expect(answer.body).toMatchObject({ chat_id: 'family', thread_id: 'parcels', text: 'I will tell you.' });
    expect(arrival.body).toMatchObject({ chat_id: 'family', thread_id: 'parcels', text: expect.stringContaining('P42 has arrived.') });
  });

  it('without a model, its own agent runs the tool', async () => {
    const gateway = await startTestGateway({ agent: parcelAgent, tools: [trackParcel] });
    cleanups.push(() => gateway.stop());
    await gateway.send({ chat_id: 'c', text: 'track P7 in 5' });
    const [reply] = await gateway.receiver.waitFor(1);
    expect(reply.body.text).toMatch(/^Tracking P7 for chat c: due /);
  });

  it('`threadline start` loads threadline.config.js from the working directory', async () => {
    const receiver = await DeliveryReceiver.start();
    cleanups.push(() => receiver.close());
    const dataDir = mkdtempSync(join(tmpdir(), 'parcel-agent-'));
    cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
    const bin = createRequire(import.meta.url).resolve('threadline/package.json').replace(/package\.json$/, 'dist/cli/threadline.js');
    const child = spawn(process.execPath, [bin, 'start'], {
      cwd: new URL('..', import.meta.url).pathname,
      env: { ...process.env, PORT: '0', HOST: '127.0.0.1', THREADLINE_DATA_DIR: dataDir, THREADLINE_WEBHOOK_DELIVERY_URL: receiver.url, OTEL_SDK_DISABLED: 'true' },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    cleanups.push(() => new Promise((resolve) => (child.exitCode !== null ? resolve() : (child.once('exit', resolve), child.kill('SIGTERM')))));
    const url = await new Promise((resolve, reject) => {
      let out = '';
      child.stdout.on('data', (chunk) => {
        out += chunk;
        const found = /listening on (http:\/\/\S+)/.exec(out);
        if (found) resolve(found[1]);
      });
      child.once('exit', (code) => reject(new Error(`threadline start exited with ${code}: ${out}`)));
    });
    const answer = await fetch(`${url}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ chat_id: 'c', text: 'track P9 in 1' }) });
    expect(answer.status).toBe(202);
    const [reply] = await receiver.waitFor(1);
    expect(reply.body.text).toMatch(/^Tracking P9 for chat c/);
  });
});
