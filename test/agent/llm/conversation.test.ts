import { describe, expect, it } from 'vitest';
import { MAX_ENTRY_CHARS, assistantEntry, authorsOf, historyMessages, toolEntry, userEntry } from '../../../src/agent/llm/conversation.js';
import { MAX_AUTHORS, MANY_AUTHORS, UNKNOWN_AUTHOR, unionOfAuthors } from '../../../src/agent/author.js';
import { Admins } from '../../../src/gateway/commands/admins.js';
import type { HistoryEntry } from '../../../src/store/store.js';

const call = (id: string) => ({ id, type: 'function' as const, function: { name: 'where', arguments: '{}' } });

describe('historyMessages', () => {
  it('leaves out a tool result whose call was cut off by the history limit', () => {
    const entries: HistoryEntry[] = [toolEntry('gone', 'result', 1, ['test:u']), assistantEntry('answer', [], 2, ['test:u']), userEntry('next', 3, 'test:u')];
    expect(historyMessages(entries)).toEqual([
      { role: 'assistant', content: 'answer' },
      { role: 'user', content: 'next' },
    ]);
  });

  it('gives a call without a recorded result one, so the API accepts the conversation', () => {
    const entries: HistoryEntry[] = [userEntry('go', 1, 'test:u'), assistantEntry('', [call('c1'), call('c2')], 2, ['test:u']), toolEntry('c1', 'ok', 3, ['test:u']), userEntry('again', 4, 'test:u')];
    expect(historyMessages(entries).slice(2)).toEqual([
      { role: 'tool', tool_call_id: 'c1', content: 'ok' },
      { role: 'tool', tool_call_id: 'c2', content: 'error: no result was recorded for this call' },
      { role: 'user', content: 'again' },
    ]);
  });

  it('moves a mirrored entry written between a call and its result after the result', () => {
    const entries: HistoryEntry[] = [
      assistantEntry('', [call('c1')], 1, ['test:u']),
      { role: 'assistant', text: 'sent', source: 'slack', at: 2 },
      toolEntry('c1', 'ok', 3, ['test:u']),
    ];
    expect(historyMessages(entries).map((message) => message.role + ':' + String(message.content))).toEqual([
      'assistant:null',
      'tool:ok',
      'user:[from slack] sent',
    ]);
  });

  it('reads an entry with unreadable extra as plain text', () => {
    const entries: HistoryEntry[] = [{ role: 'assistant', text: 'hello', extra: '{broken', at: 1 }, { role: 'tool', text: 'x', extra: '{}', at: 2 }];
    expect(historyMessages(entries)).toEqual([{ role: 'assistant', content: 'hello' }]);
  });

  it('cuts a huge entry to MAX_ENTRY_CHARS and says so', () => {
    const entry = toolEntry('c1', 'y'.repeat(MAX_ENTRY_CHARS * 3), 1, ['test:u']);
    expect(entry.text).toHaveLength(MAX_ENTRY_CHARS);
    expect(entry.text).toMatch(/\[cut: 32000 more characters\]$/);
  });
});

describe('authors of history entries', () => {
  it('records who wrote an entry, and names nobody for mirrored text or an entry of an older version', () => {
    expect(authorsOf(userEntry('hi', 1, 'telegram:42'))).toEqual(['telegram:42']);
    expect(authorsOf(assistantEntry('ok', [], 2, ['telegram:42', 'telegram:7']))).toEqual(['telegram:42', 'telegram:7']);
    expect(authorsOf({ role: 'user', text: 'sent', source: 'slack', at: 3 })).toEqual(['~mirrored:slack']);
    expect(authorsOf({ role: 'user', text: 'old', at: 4 })).toEqual([UNKNOWN_AUTHOR]);
    expect(authorsOf({ role: 'user', text: 'forged', extra: '{"authors":[]}', at: 5 })).toEqual([UNKNOWN_AUTHOR]);
  });

  it('keeps at most MAX_AUTHORS, folding the rest into one that holds no rights', () => {
    const many = unionOfAuthors(Array.from({ length: 20 }, (_, i) => `webhook:u${i}`));
    expect(many).toHaveLength(MAX_AUTHORS);
    expect(many.at(-1)).toBe(MANY_AUTHORS);
  });

  it('gives no marker admin rights, whatever THREADLINE_ADMINS lists', () => {
    const admins = Admins.parse('telegram:42');
    expect(admins.holds('telegram:42')).toBe(true);
    expect(admins.holds('telegram:7')).toBe(false);
    for (const marker of [UNKNOWN_AUTHOR, MANY_AUTHORS, '~mirrored:cli', '~unverified:webhook']) {
      expect(admins.holds(marker)).toBe(false);
      expect(Admins.parse('*').holds(marker)).toBe(marker === '~unverified:webhook');
    }
  });
});
