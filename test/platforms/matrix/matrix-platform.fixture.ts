// What the Matrix platform tests share: a platform on a FakeMatrix, its logs, its intake and its tokens.
import { pino, type Logger } from 'pino';
import type { LeaseFactory } from '../../../src/lease/lease.js';
import { MatrixPlatform } from '../../../src/platforms/matrix/matrix-platform.js';
import type { AcceptedMessage, Idempotency, InboundMessage, Intake } from '../../../src/platforms/platform.js';
import type { SyncTokens } from '../../../src/store/store.js';
import type { FakeMatrix } from '../../../src/testing/fake-matrix.js';

/** Sync tokens in memory, as a store keeps them (compare-and-set). */
export function memoryTokens(): SyncTokens & { readonly stored: Map<string, string> } {
  const stored = new Map<string, string>();
  return {
    stored,
    get: async (stream) => stored.get(stream),
    advance: async (stream, previous, token) => {
      if (stored.get(stream) !== previous) return false;
      stored.set(stream, token);
      return true;
    },
  };
}

/** An intake that takes every message once by its idempotency key, as the gateway's does, and says which it saw again. */
export function takingIntake(): Intake & { readonly taken: InboundMessage[]; readonly duplicates: string[] } {
  const taken: InboundMessage[] = [];
  const duplicates: string[] = [];
  const keys = new Set<string>();
  return {
    taken,
    duplicates,
    accept: async (message: InboundMessage, _inbound: unknown, idempotency?: Idempotency): Promise<AcceptedMessage> => {
      const key = idempotency!.key;
      const answer = { messageId: `m-${key}`, sessionId: 's', traceId: '0'.repeat(32) };
      if (keys.has(key)) {
        duplicates.push(key);
        return { ...answer, duplicate: true };
      }
      keys.add(key);
      taken.push(message);
      return answer;
    },
  };
}

/** A logger whose records (level and message, with their fields) are kept in `lines`. */
export function capturedLogger(): { readonly logger: Logger; readonly lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const logger = pino({ level: 'debug' }, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
  return { logger, lines };
}

export interface PlatformOn {
  readonly fake: FakeMatrix;
  readonly tokens: SyncTokens;
  readonly logger?: Logger;
  readonly homeserverUrl?: string;
  readonly syncLease?: LeaseFactory;
}

/** A Matrix platform on the fake, syncing with a short poll. */
export function matrixPlatform(on: PlatformOn): MatrixPlatform {
  return new MatrixPlatform({
    homeserverUrl: on.homeserverUrl ?? on.fake.homeserverUrl,
    accessToken: on.fake.accessToken,
    logger: on.logger ?? pino({ level: 'silent' }),
    syncTokens: on.tokens,
    pollMs: 1_000,
    ...(on.syncLease === undefined ? {} : { syncLease: on.syncLease }),
  });
}
