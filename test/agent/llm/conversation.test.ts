import { describe, expect, it } from 'vitest';
import { MAX_ENTRY_CHARS, assistantEntry, historyMessages, toolEntry, userEntry } from '../../../src/agent/llm/conversation.js';
import type { HistoryEntry } from '../../../src/store/store.js';

const call = (id: string) => ({ id, type: 'function' as const, function: { name: 'where', arguments: '{}' } });

describe('historyMessages', () => {
  it('leaves out a tool result whose call was cut off by the history limit', () => {
    const entries: HistoryEntry[] = [toolEntry('gone', 'result', 1), assistantEntry('answer', [], 2), userEntry('next', 3)];
    expect(historyMessages(entries)).toEqual([
      { role: 'assistant', content: 'answer' },
      { role: 'user', content: 'next' },
    ]);
  });

  it('gives a call without a recorded result one, so the API accepts the conversation', () => {
    const entries: HistoryEntry[] = [userEntry('go', 1), assistantEntry('', [call('c1'), call('c2')], 2), toolEntry('c1', 'ok', 3), userEntry('again', 4)];
    expect(historyMessages(entries).slice(2)).toEqual([
      { role: 'tool', tool_call_id: 'c1', content: 'ok' },
      { role: 'tool', tool_call_id: 'c2', content: 'error: no result was recorded for this call' },
      { role: 'user', content: 'again' },
    ]);
  });

  it('moves a mirrored entry written between a call and its result after the result', () => {
    const entries: HistoryEntry[] = [
      assistantEntry('', [call('c1')], 1),
      { role: 'assistant', text: 'sent', source: 'slack', at: 2 },
      toolEntry('c1', 'ok', 3),
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
    const entry = toolEntry('c1', 'y'.repeat(MAX_ENTRY_CHARS * 3), 1);
    expect(entry.text).toHaveLength(MAX_ENTRY_CHARS);
    expect(entry.text).toMatch(/\[cut: 32000 more characters\]$/);
  });
});
