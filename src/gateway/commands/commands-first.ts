import type { Agent, Turn } from '../../agent/agent.js';
import { commandOf } from './command.js';

/**
 * The gateway's dispatch: a command (/status, /run ...) goes to `commands`, any other text to
 * `agent`, so an agent of a user's own, the LLM agent included, never sees a command, but for
 * those it names in `agent.commands` (the LLM agent's `/confirm`).
 */
export function commandsFirst(commands: Agent, agent: Agent): Agent {
  return {
    handle: (turn: Turn) => {
      const command = commandOf(turn.text);
      return command !== undefined && agent.commands?.has(command) !== true ? commands.handle(turn) : agent.handle(turn);
    },
  };
}
