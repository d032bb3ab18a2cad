import type { Agent, Turn } from './agent.js';
import { ADMIN_COMMANDS, commandOf } from './command.js';

/**
 * The default agent: the gateway's own commands, and an echo of anything else. Tools and
 * the commands that use them plug in behind the same Agent interface.
 */
export class EchoAgent implements Agent {
  async handle(turn: Turn): Promise<void> {
    const command = commandOf(turn.text);
    if (command !== undefined && ADMIN_COMMANDS.has(command) && !(await turn.authorize(command))) return;
    switch (command) {
      case '/status':
        return turn.reply(statusText(turn));
      case '/sethome': {
        await turn.setHome();
        return turn.reply(`This chat is now the home channel for ${turn.session.platform}.`);
      }
      case '/new':
        await turn.newConversation();
        return turn.reply('Started a new conversation.');
      case '/stop':
        return turn.reply('Stopped.');
      default:
        return turn.reply(turn.text);
    }
  }
}

function statusText(turn: Turn): string {
  const { session } = turn;
  return [
    `platform: ${session.platform}`,
    `chat: ${session.chatId} (${session.chatType})`,
    `thread: ${session.threadId ?? 'none'}`,
    `session: ${session.sessionId}`,
    `trace: ${turn.traceId}`,
  ].join('\n');
}
