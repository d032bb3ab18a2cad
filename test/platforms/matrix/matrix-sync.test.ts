import { afterEach, describe, expect, it } from 'vitest';
import { FakeMatrix } from '../../../src/testing/fake-matrix.js';
import { until } from '../../helpers/gateway.js';
import { capturedLogger, matrixPlatform, memoryTokens, takingIntake } from './matrix-platform.fixture.js';

const closing: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close();
});

async function fakeMatrix(): Promise<FakeMatrix> {
  const fake = await FakeMatrix.start();
  closing.push(() => fake.close());
  return fake;
}

/** A platform started on the fake, once its /sync reads on from a stored token. */
async function started(fake: FakeMatrix, tokens = memoryTokens(), logger = capturedLogger()) {
  const platform = matrixPlatform({ fake, tokens, logger: logger.logger });
  const intake = takingIntake();
  const syncs = fake.sinceSyncs;
  platform.start(intake);
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await platform.close();
  };
  closing.push(close);
  await fake.waitForSinceSyncs(syncs + 1);
  return { platform, intake, tokens, logs: logger.lines, close };
}

const texts = (intake: ReturnType<typeof takingIntake>) => intake.taken.map((message) => message.text);

describe('matrix /sync', () => {
  it('skips what was written before its first sync, then takes every message once, in order', async () => {
    const fake = await fakeMatrix();
    fake.postMessage('!a:fake.local', 'history');
    const { intake } = await started(fake);
    for (const n of [1, 2, 3]) fake.postMessage('!a:fake.local', `new ${n}`);
    await until(() => intake.taken.length === 3);
    expect(texts(intake)).toEqual(['new 1', 'new 2', 'new 3']);
  });

  it('reads on from the stored token after a restart: what came meanwhile is taken, nothing twice', async () => {
    const fake = await fakeMatrix();
    const tokens = memoryTokens();
    const first = await started(fake, tokens);
    fake.postMessage('!a:fake.local', 'before');
    await until(() => first.intake.taken.length === 1);
    await first.close();
    for (const n of [1, 2]) fake.postMessage('!a:fake.local', `while down ${n}`, { threadRoot: '$t' });
    const second = await started(fake, tokens);
    await until(() => second.intake.taken.length === 2);
    fake.postMessage('!a:fake.local', 'after');
    await until(() => second.intake.taken.length === 3);
    expect(texts(second.intake)).toEqual(['while down 1', 'while down 2', 'after']);
    expect(second.intake.taken.slice(0, 2).every((message) => message.session.threadId === '$t')).toBe(true);
    expect(second.intake.duplicates).toEqual([]);
  });

  it('reads a gap its timeline cut short from /messages: a long outage loses nothing', async () => {
    const fake = await fakeMatrix();
    const tokens = memoryTokens();
    await (await started(fake, tokens)).close();
    // More than the sync filter's timeline holds (50), in two rooms.
    for (let n = 0; n < 130; n++) fake.postMessage(n % 2 === 0 ? '!busy:fake.local' : '!other:fake.local', `m${n}`);
    const { intake } = await started(fake, tokens);
    await until(() => intake.taken.length === 130);
    expect(fake.calls.some((call) => call.endpoint === 'messages')).toBe(true);
    for (const room of ['!busy:fake.local', '!other:fake.local']) {
      const inRoom = intake.taken.filter((message) => message.session.chatId === room).map((message) => Number(message.text.slice(1)));
      expect(inRoom).toEqual([...inRoom].sort((a, b) => a - b));
      expect(inRoom).toHaveLength(65);
    }
  });

  it('logs an end-to-end encrypted event, once a room at warn, and takes nothing from it; the rooms beside it are answered', async () => {
    const fake = await fakeMatrix();
    const { intake, logs } = await started(fake);
    fake.postEncrypted('!secret:fake.local');
    fake.postEncrypted('!secret:fake.local');
    fake.postMessage('!plain:fake.local', 'readable');
    const refusals = () => logs.filter((line) => String(line['msg']).includes('end-to-end encrypted'));
    await until(() => intake.taken.length === 1 && refusals().length === 2);
    expect(refusals().map((line) => [line['level'], line['chat']])).toEqual([
      [40, '!secret:fake.local'],
      [20, '!secret:fake.local'],
    ]);
    expect(intake.taken.map((message) => message.session.chatId)).toEqual(['!plain:fake.local']);
  });

  it('ignores its own messages, and logs an invite without joining', async () => {
    const fake = await fakeMatrix();
    const { intake, logs } = await started(fake);
    fake.postMessage('!a:fake.local', 'from the bot itself', { sender: fake.userId });
    fake.invite('!invited:fake.local');
    fake.postMessage('!a:fake.local', 'from a person');
    await until(() => intake.taken.length === 1);
    expect(texts(intake)).toEqual(['from a person']);
    await until(() => logs.some((line) => String(line['msg']).includes('invited to a room')));
    expect(logs.find((line) => String(line['msg']).includes('invited to a room'))).toMatchObject({ chat: '!invited:fake.local' });
  });

  it('waits out a 429 on /sync as long as retry_after_ms says, then reads on', async () => {
    const fake = await fakeMatrix();
    const { intake } = await started(fake);
    fake.failNext(1, { endpoint: 'sync', retryAfterMs: 1_200 });
    // The long poll under way answers with this message; the /sync after it is the one refused.
    fake.postMessage('!a:fake.local', 'first');
    await until(() => fake.failedCalls.length === 1);
    fake.postMessage('!a:fake.local', 'second');
    await until(() => intake.taken.length === 2, 5_000);
    const refused = fake.failedCalls[0]!;
    const next = fake.calls.find((call) => call.endpoint === 'sync' && call.at > refused.at)!;
    expect(next.at - refused.at).toBeGreaterThanOrEqual(1_150);
  });
});
