/**
 * What a careful developer writes without threadline: fastify and better-sqlite3 on the main
 * thread (WAL, synchronous=NORMAL), the message stored before its 202, then an outbox row,
 * the POST to the delivery URL through undici's pooled `request`, and both rows marked done
 * in one transaction. Pending rows are posted again at start-up. No sessions, telemetry or
 * order within a chat: the durable baseline that threadline's own cost is measured against.
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import Fastify from 'fastify';
import { Agent, request } from 'undici';

const target = process.env['DELIVERY_URL']!;
const db = new Database(join(process.env['DATA_DIR']!, 'forwarder.db'));
db.pragma('journal_mode = WAL');
db.pragma('synchronous = NORMAL');
db.exec(`
  CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY, chat_id TEXT NOT NULL, thread_id TEXT, text TEXT NOT NULL,
    received_at INTEGER NOT NULL, done_at INTEGER);
  CREATE TABLE IF NOT EXISTS outbox (
    id INTEGER PRIMARY KEY, message_id INTEGER NOT NULL REFERENCES messages (id), body TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0, done_at INTEGER);
  CREATE INDEX IF NOT EXISTS outbox_pending ON outbox (id) WHERE done_at IS NULL;
`);
const insertMessage = db.prepare('INSERT INTO messages (chat_id, thread_id, text, received_at) VALUES (?, ?, ?, ?)');
const insertOutbox = db.prepare('INSERT INTO outbox (message_id, body) VALUES (?, ?)');
const markOutboxDone = db.prepare('UPDATE outbox SET done_at = ? WHERE id = ?');
const markMessageDone = db.prepare('UPDATE messages SET done_at = ? WHERE id = ?');
const countAttempt = db.prepare('UPDATE outbox SET attempts = attempts + 1 WHERE id = ?');
const pending = db.prepare<[], { id: number; message_id: number; body: string }>('SELECT id, message_id, body FROM outbox WHERE done_at IS NULL');
const markDone = db.transaction((outboxId: number, messageId: number) => {
  const now = Date.now();
  markOutboxDone.run(now, outboxId);
  markMessageDone.run(now, messageId);
});

const dispatcher = new Agent({ connections: 256 });
const app = Fastify();

async function deliver(outboxId: number, messageId: number, body: string): Promise<void> {
  try {
    const answer = await request(target, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': String(outboxId) },
      body,
      dispatcher,
      headersTimeout: 10_000,
      bodyTimeout: 10_000,
    });
    await answer.body.dump();
    if (answer.statusCode >= 200 && answer.statusCode < 300) return markDone(outboxId, messageId);
    app.log.warn({ outboxId, status: answer.statusCode }, 'delivery refused');
  } catch (error) {
    app.log.warn({ outboxId, err: error }, 'delivery failed');
  }
  countAttempt.run(outboxId);
}

const messageSchema = {
  type: 'object',
  required: ['chat_id', 'text'],
  additionalProperties: false,
  properties: {
    chat_id: { type: 'string', minLength: 1, maxLength: 256 },
    thread_id: { type: 'string', minLength: 1, maxLength: 256 },
    text: { type: 'string', maxLength: 4096 },
  },
} as const;

app.post<{ Body: { chat_id: string; thread_id?: string; text: string } }>('/v1/messages', { schema: { body: messageSchema } }, async (req, reply) => {
  const { chat_id: chatId, thread_id: threadId = null, text } = req.body;
  const messageId = Number(insertMessage.run(chatId, threadId, text, Date.now()).lastInsertRowid);
  void reply.code(202).send({ message_id: messageId });
  const body = JSON.stringify({ chat_id: chatId, thread_id: threadId, text, kind: 'reply', in_reply_to: messageId });
  const outboxId = Number(insertOutbox.run(messageId, body).lastInsertRowid);
  void deliver(outboxId, messageId, body);
  return reply;
});

for (const row of pending.all()) void deliver(row.id, row.message_id, row.body);
const address = await app.listen({ port: 0, host: '127.0.0.1' });
console.log(`listening on ${address}`);
process.once('SIGTERM', () => {
  void app.close().then(() => {
    db.close();
    process.exit(0);
  });
});
