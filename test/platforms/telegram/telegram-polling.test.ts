import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { ThreadlineError } from '../../../src/errors.js';
import type { AcceptedMessage, InboundMessage, Intake } from '../../../src/platforms/platform.js';
import { TelegramPlatform } from '../../../src/platforms/telegram/telegram-platform.js';
import { FakeTelegram } from '../../../src/testing/fake-telegram.js';
import { until } from '../../helpers/gateway.js';

const closing: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close();
});

/** An intake that refuses the first `failures` accepts with `code`, then takes everything. */
function flakyIntake(failures: number, code: string): Intake & { readonly taken: InboundMessage[]; readonly calls: () => number } {
  const taken: InboundMessage[] = [];
  let calls = 0;
  return {
    taken,
    calls: () => calls,
    accept: async (message): Promise<AcceptedMessage> => {
      if (++calls <= failures) throw new ThreadlineError(code as never, 'not now');
      taken.push(message);
      return { messageId: `m${calls}`, sessionId: 's', traceId: '0'.repeat(32) };
    },
  };
}

async function polling(intake: Intake): Promise<FakeTelegram> {
  const fake = await FakeTelegram.start();
  closing.push(() => fake.close());
  const platform = new TelegramPlatform({ token: '1:test', mode: 'polling', apiRoot: fake.apiRoot, logger: pino({ level: 'silent' }) });
  platform.start(intake);
  closing.push(() => platform.close());
  return fake;
}

const update = (id: number, text: string) =>
  ({ update_id: id, message: { message_id: id, date: 0, chat: { id: 5, type: 'private', first_name: 'Bo' }, text } }) as never;

describe('telegram long polling', () => {
  it('keeps an update it could not store and takes it once the store answers, instead of confirming it lost', async () => {
    const intake = flakyIntake(1, 'TL_STORE_FAILED');
    const fake = await polling(intake);
    fake.queueUpdate(update(1, 'kept'));
    await until(() => intake.taken.length === 1, 5_000);
    expect(intake.taken.map((message) => message.text)).toEqual(['kept']);
  });

  it('drops an update that can never be taken, without trying again', async () => {
    const intake = flakyIntake(1, 'TL_SESSION_INVALID');
    const fake = await polling(intake);
    fake.queueUpdate(update(1, 'unusable'));
    fake.queueUpdate(update(2, 'next'));
    await until(() => intake.taken.length === 1, 5_000);
    expect(intake.taken.map((message) => message.text)).toEqual(['next']);
  });

  it('stops trying once intake has closed for good, instead of knocking every second', async () => {
    const intake = flakyIntake(Number.POSITIVE_INFINITY, 'TL_SHUTTING_DOWN');
    const fake = await polling(intake);
    fake.queueUpdate(update(1, 'too late'));
    await until(() => intake.calls() === 1, 5_000);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(intake.calls()).toBe(1);
  });
});
