const id = { type: 'string', minLength: 1, maxLength: 256 } as const;

/** The fixed inbound contract of POST /v1/messages. */
export const webhookMessageSchema = {
  type: 'object',
  required: ['chat_id', 'text'],
  additionalProperties: false,
  properties: {
    chat_id: id,
    text: { type: 'string', minLength: 1 },
    thread_id: id,
    chat_type: { type: 'string', enum: ['dm', 'group', 'channel', 'thread'] },
    chat_name: id,
    user_id: id,
    user_name: id,
    message_id: id,
  },
} as const;

export interface WebhookMessageBody {
  chat_id: string;
  text: string;
  thread_id?: string;
  chat_type?: 'dm' | 'group' | 'channel' | 'thread';
  chat_name?: string;
  user_id?: string;
  user_name?: string;
  message_id?: string;
}
