import { afterEach, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../../../src/testing/index.js';

let gateway: TestGateway | undefined;
afterEach(async () => {
  await gateway?.stop();
  gateway = undefined;
});

describe("an admin's /remind", () => {
  it("counts against the gateway's total alone, while a user's meets the per-user cap", async () => {
    gateway = await startTestGateway({ webhookToken: true, env: { THREADLINE_ADMINS: 'webhook:boss', THREADLINE_CRON_MAX_PER_USER: '1' } });
    const remind = async (user: string, text: string) => {
      const before = gateway!.receiver.received.length;
      await gateway!.send({ chat_id: 'team', chat_type: 'group', user_id: user, text: `/remind 1h ${text}` });
      await gateway!.receiver.waitFor(before + 1);
      return gateway!.receiver.received.at(-1)!.body.text;
    };
    expect(await remind('bob', 'one')).toMatch(/^Reminder \S+ set/);
    expect(await remind('bob', 'two')).toMatch(/THREADLINE_CRON_MAX_PER_USER=1/);
    expect(await remind('boss', 'one')).toMatch(/^Reminder \S+ set/);
    expect(await remind('boss', 'two')).toMatch(/^Reminder \S+ set/);
  });
});
