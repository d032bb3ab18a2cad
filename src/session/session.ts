/** How a platform's conversation is shaped; decides how replies are threaded. */
export type ChatType = 'dm' | 'group' | 'channel' | 'thread';

export const CHAT_TYPES: readonly ChatType[] = ['dm', 'group', 'channel', 'thread'];

/**
 * The routing of one conversation: everything needed to send a reply or a later
 * notification to the right chat and thread. Instances are frozen and validated
 * (see createSession); an absent optional field means "none", never "unknown".
 */
export interface Session {
  readonly platform: string;
  readonly chatId: string;
  readonly chatName?: string;
  readonly chatType: ChatType;
  readonly threadId?: string;
  readonly userId?: string;
  readonly userName?: string;
  /** The reply anchor: the inbound message a reply should quote or thread under. */
  readonly messageId?: string;
  /** Stable id of the conversation; derived from the routing when not given. */
  readonly sessionId: string;
}

/** What a caller supplies to enter a session; sessionId is derived when omitted. */
export type SessionInput = Omit<Session, 'sessionId'> & { readonly sessionId?: string };

export const SESSION_FIELDS = [
  'platform',
  'chatId',
  'chatName',
  'chatType',
  'threadId',
  'userId',
  'userName',
  'messageId',
  'sessionId',
] as const satisfies readonly (keyof Session)[];

export type SessionField = (typeof SESSION_FIELDS)[number];
