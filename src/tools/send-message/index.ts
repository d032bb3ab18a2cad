import { createHash, randomUUID } from 'node:crypto';
import { Type } from 'typebox';
import { ThreadlineError } from '../../errors.js';
import { TargetResolver } from '../../deliveries/target-resolver.js';
import { formatDestination, type Destination } from '../../session/delivery.js';
import { parseTarget, type Target } from '../../session/target.js';
import { activeContext, captureRouting, contextWithSession, createSession, currentSession, getSession, type Session } from '../../session/index.js';
import type { Tool } from '../tool.js';
import { defineTool } from '../define-tool.js';
import type { ToolServices } from '../tool-services.js';
import { toolSurface } from '../tool-surface.js';

/** The longest text send_message carries, well under every platform's message limit. */
export const MAX_SEND_CHARS = 4_000;

const parameters = Type.Object(
  {
    target: Type.String({ minLength: 1, maxLength: 1_000, description: 'origin, home, home:<platform>, or <platform>:<chat>[:<thread>] with ids percent-encoded' }),
    text: Type.String({ minLength: 1, maxLength: MAX_SEND_CHARS }),
  },
  { additionalProperties: false },
);

/**
 * send_message: sends text to another chat or thread, on any enabled platform, as a delivery
 * of kind `send`, and mirrors it into the target's conversation history with a source label:
 * the platform of the session it was sent from, or `cli` outside the gateway.
 */
export function createSendMessage(services: ToolServices, options: { readonly historyKeep: number }): Tool {
  const targets = new TargetResolver(services.store.homes, services.platforms);
  return defineTool({
    name: 'send_message',
    description: 'Send a message to this or another chat or thread (target: origin, home, home:<platform>, or <platform>:<chat>[:<thread>]).',
    input: parameters,
    adminOnly: true,
    // It answers with what it did, nothing others wrote.
    trustedOutput: true,
    async run(args) {
      const { target: targetText, text } = args as { target: string; text: string };
      const target = parseTarget(targetText);
      // An explicit destination needs no session: a script's message is its own origin.
      const session = currentSession() ?? (target.to === 'explicit' ? originOfExplicit(targets.check(target)) : undefined);
      if (session === undefined) {
        throw new ThreadlineError(
          'TL_SESSION_MISSING',
          `send_message to ${target.to} runs in a session: inside the gateway, or with THREADLINE_SESSION_PLATFORM and THREADLINE_SESSION_CHAT_ID set; or name a <platform>:<chat>[:<thread>]`,
        );
      }
      // Outside the gateway the session comes from the environment (or the destination): capture that one.
      const origin = captureRouting(getSession() === undefined ? contextWithSession(activeContext(), session) : activeContext());
      const destination = await targets.resolve(target, origin);
      await services.deliverer.deliver({ id: sendId(session, destination, text), kind: 'send', text, target: { to: 'explicit', destination }, origin });
      const source = toolSurface();
      await services.store.history.mirror(destination, { role: 'user', text, source, at: services.clock.now() }, options.historyKeep);
      return { text: `Sent to ${formatDestination(destination)}.` };
    },
  });
}

/**
 * Deterministic within the message that asked (a turn replayed after a crash sends nothing
 * twice); a fresh id where no inbound message anchors it (a CLI call).
 */
function sendId(session: Session, destination: Destination, text: string): string {
  if (session.messageId === undefined) return `send:${randomUUID()}`;
  const digest = createHash('sha256').update(`${session.sessionId}\0${session.messageId}\0${formatDestination(destination)}\0${text}`).digest('base64url');
  return `send:${digest.slice(0, 32)}`;
}

/** The origin of a message sent from outside any session to an explicit destination: that chat and thread. */
function originOfExplicit(target: Target): Session {
  if (target.to !== 'explicit') throw new ThreadlineError('TL_TARGET_INVALID', 'only an explicit destination is its own origin');
  const { platform, chatId, threadId } = target.destination;
  return createSession({ platform, chatId, chatType: 'group', ...(threadId === undefined ? {} : { threadId }) });
}
