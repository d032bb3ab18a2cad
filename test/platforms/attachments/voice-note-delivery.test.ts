import { describe, expect, it } from 'vitest';
import type { Agent } from '../../../src/agent/agent.js';
import { executeTool } from '../../../src/tools/execute-tool.js';
import { createTts } from '../../../src/tools/tts/index.js';
import type { TestGateway } from '../../../src/testing/index.js';
import { until, useTestGateways } from '../../helpers/gateway.js';

/** Speaks every message with the tts tool, inside its turn, and replies with the voice note. */
const speakingAgent: Agent = {
  async handle(turn) {
    const tts = createTts({ voice: 'en', maxChars: 500 });
    const result = await executeTool(tts, { text: turn.text }, { signal: turn.signal, authorize: () => turn.authorize('tts') });
    await turn.reply(result.text, { attachment: result.attachment });
  },
};

const isOggOpus = (bytes: Buffer) => bytes.subarray(0, 4).toString('latin1') === 'OggS' && bytes.includes('OpusHead');
const startTestGateway = useTestGateways();

describe('a voice note from the tts tool, through the outbox', () => {
  it('reaches the webhook receiver inline, in the chat and thread', async () => {
    const gateway: TestGateway = await startTestGateway({ agent: speakingAgent });
    await gateway.send({ chat_id: 'c-7', thread_id: 't-7', text: 'Hello webhook.' });
    const [delivery] = await gateway.receiver.waitFor(1);
    expect(delivery!.body).toMatchObject({ chat_id: 'c-7', thread_id: 't-7', attachment: { filename: 'voice.ogg', content_type: 'audio/ogg' } });
    expect(isOggOpus(Buffer.from(delivery!.body.attachment!.data_base64, 'base64'))).toBe(true);
  });

  it('reaches Telegram as a voice note in the topic', async () => {
    const gateway = await startTestGateway({ agent: speakingAgent, telegram: true });
    const status = (
      await gateway.sendTelegram({
        update_id: 3,
        message: {
          message_id: 3,
          date: 0,
          chat: { id: -1001, type: 'supergroup', title: 'Team', is_forum: true },
          from: { id: 7, is_bot: false, first_name: 'Ann' },
          text: 'Hello Telegram.',
          message_thread_id: 12,
          is_topic_message: true,
        },
      })
    ).status;
    expect(status).toBe(200);
    await until(() => gateway.telegram!.files.length === 1);
    const [voice] = gateway.telegram!.files;
    expect(voice).toMatchObject({ method: 'sendVoice', chatId: '-1001', threadId: '12', filename: 'voice.ogg' });
    expect(isOggOpus(voice!.bytes)).toBe(true);
  });

  it('reaches Slack as a file in the thread', async () => {
    const gateway = await startTestGateway({ agent: speakingAgent, slack: true });
    const thread = '1700000000.000007';
    const status = (
      await gateway.sendSlack({
        type: 'event_callback',
        event_id: 'Ev7',
        event: { type: 'message', channel: 'C77', channel_type: 'channel', user: 'U1', text: 'Hello Slack.', ts: '1800000000.000007', thread_ts: thread },
      })
    ).status;
    expect(status).toBe(200);
    await until(() => gateway.slack!.files.length === 1);
    const [file] = gateway.slack!.files;
    expect(file).toMatchObject({ channel: 'C77', threadTs: thread, filename: 'voice.ogg' });
    expect(file!.initialComment).toMatch(/^Voice note/);
    expect(isOggOpus(file!.bytes)).toBe(true);
  });
});
