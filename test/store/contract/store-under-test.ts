// What every contract test is given of a store, whichever implementation it runs against.
import type { Destination } from '../../../src/session/delivery.js';
import type { AnyStore } from '../../../src/store/store.js';

/**
 * How an implementation is known to differ where the Store interface leaves it open. Each
 * contract test that depends on one asserts the behaviour declared, so a difference stays
 * visible and a change of either side fails the suite.
 */
export interface StoreTraits {
  /**
   * Instances share the store through queues (the distributed store): maxPendingMessages is
   * checked, a duplicate carries the first message while it waits, an accept sent again is
   * accepted, and a stored message that does not parse is left out of pending().
   */
  readonly sharedIntake: boolean;
  /** ProcessRecord.instance is kept; the embedded store's one gateway runs every process. */
  readonly keepsInstance: boolean;
}

/** The status a process's completion notice can be arranged in. */
export type NoticeStatus = 'sending' | 'done' | 'failed';

/** A store opened for one test, with what the test arranges the way the store's neighbours would. */
export interface StoreUnderTest {
  readonly store: AnyStore;
  /** Another writer on the same data: a second gateway instance, or the store itself where one process is the only writer. */
  peer(): AnyStore;
  /** Closes the store and opens it again on the same data. */
  reopen(): Promise<AnyStore>;
  /**
   * A delivery to `destination` recorded and not yet done, as the outbox records one. finish()
   * makes it done when it is the first open one of its destination: the embedded outbox sends a chat's in turn.
   */
  openDelivery(destination: Destination): Promise<{ finish(): Promise<void> }>;
  /** The completion notice of process `processId` recorded by the outbox in `status`. */
  notice(processId: string, status: NoticeStatus): Promise<void>;
  /** Overwrites a stored record's origin with `origin` and its destination with one that does not parse. */
  damage(table: 'processes' | 'schedules', id: string, origin: string): Promise<void>;
  /** Overwrites a stored message so that its routing does not parse. */
  damageMessage(id: string): Promise<void>;
  close(): Promise<void>;
}

/** One implementation of the Store interface, as the contract suite opens it. */
export interface StoreImplementation {
  readonly name: string;
  readonly traits: StoreTraits;
  open(): Promise<StoreUnderTest>;
}
