import { describe, expect, it } from 'vitest';
import { isSessionNamespaceKey, names } from '../../src/session/index.js';

describe('isSessionNamespaceKey', () => {
  it.each(Object.values(names).filter((value) => typeof value === 'string'))('claims threadline name %s', (name) => {
    expect(isSessionNamespaceKey(name)).toBe(true);
  });

  it.each(['Chat.Id', 'CHAT.THREAD.ID', 'Session.ID', 'USER.name', 'Message.Id', 'ThreadLine.anything', 'GEN_AI.Conversation.Id'])(
    'claims %s whatever its case',
    (key) => {
      expect(isSessionNamespaceKey(key)).toBe(true);
    },
  );

  it.each(['tenant', 'chat', 'chatid', 'userid', 'gen_ai.request.model', 'x.chat.id', ' chat.id', 'sessions.id'])(
    'leaves the foreign key %j alone',
    (key) => {
      expect(isSessionNamespaceKey(key)).toBe(false);
    },
  );
});
