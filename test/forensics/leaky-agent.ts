/**
 * The agent of the sampled-misroute tests: the command agent, except that it leaks as a context
 * shared between messages would. LEAK_QUESTION is answered in the session of thread build-42,
 * once that thread has spoken.
 */
import { expect } from 'vitest';
import type { Agent, Turn } from '../../src/agent/agent.js';
import { CommandAgent } from '../../src/gateway/commands/command-agent.js';
import { captureRouting, withSession, type RoutingSnapshot, type Session } from '../../src/session/index.js';
import type { TestGateway } from '../../src/testing/index.js';
import type { Toolbox } from '../../src/tools/toolbox.js';

export const LEAK_QUESTION = 'did build 17 pass?';

export class LeakyAgent {
  /** Each turn's session and routing, by the text of its message. */
  readonly sessions = new Map<string, Session>();
  readonly routings = new Map<string, RoutingSnapshot>();

  /** `gateway`: the gateway the agent runs in, once started (its router sends the leak). */
  constructor(private readonly gateway: () => TestGateway) {}

  /** For startTestGateway's `agent`. */
  readonly agent = (toolbox: Toolbox): Agent => {
    const commands = new CommandAgent(toolbox.tools);
    return {
      handle: async (turn: Turn) => {
        this.sessions.set(turn.text, turn.session);
        this.routings.set(turn.text, captureRouting());
        const leaked = [...this.sessions.values()].find((session) => session.threadId === 'build-42');
        if (turn.text === LEAK_QUESTION && leaked !== undefined) {
          const origin = captureRouting();
          return withSession(leaked, () => this.gateway().running.gateway.router.deliver({ id: `${turn.messageId}/leak`, kind: 'reply', text: 'build 17 passed', origin }));
        }
        return commands.handle(turn);
      },
    };
  };

  /** Posts `text` to the gateway as user u-7 of a group chat; answers the trace id of its 202. */
  async say(chat: string, thread: string | undefined, text: string, headers: Record<string, string> = {}): Promise<string> {
    const answer = await this.gateway().send({ chat_id: chat, ...(thread === undefined ? {} : { thread_id: thread }), chat_type: 'group', user_id: 'u-7', text }, headers);
    expect(answer.status).toBe(202);
    return String(answer.body['trace_id']);
  }
}
