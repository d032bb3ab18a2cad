import { messageOf } from '../../errors.js';
import { runDetached } from '../../session/index.js';
import type { ProcessRecord } from '../../store/store.js';
import { deliverLater } from '../deliver-later.js';
import { isTransientFailure } from '../delivery-failure.js';
import type { BackgroundWork, InstanceLiveness, ToolServices } from '../tool-services.js';
import { lostText } from './notification-text.js';

/** The exit note recorded for a command whose instance died before its end was seen. */
export function lostNote(instance: string): string {
  return `lost with its instance ${instance}`;
}

/**
 * Reports the background commands of instances that died: their watchers died with them, so
 * without this their chats would never hear of them. Every instance sweeps, every
 * `checkEveryMs`, from the root context; a claim in the shared store lets one report each
 * command, under its usual notice id `proc:<id>:done` (a second report is recorded once).
 * A claimer that dies lets its claim expire, and another reports the command then.
 */
export class LostInstanceSweep implements BackgroundWork {
  private cancel: (() => void) | undefined;
  private sweeping: Promise<void> | undefined;
  private running = false;

  constructor(
    private readonly services: ToolServices,
    private readonly liveness: InstanceLiveness,
    /** This instance: its own commands are its watchers' to report. */
    private readonly self: string,
  ) {}

  async start(): Promise<void> {
    this.running = true;
    this.arm();
  }

  /** Stops the timer and waits for a sweep under way. */
  async stop(): Promise<void> {
    this.running = false;
    this.cancel?.();
    this.cancel = undefined;
    await this.sweeping;
  }

  /**
   * One pass: each command of an instance whose heartbeat expired, claimed, reported to its
   * origin (unless it asked for no notice) and removed. Resolves when the pass is done.
   */
  sweep(): Promise<void> {
    this.sweeping ??= runDetached(() => this.pass()).finally(() => {
      this.sweeping = undefined;
    });
    return this.sweeping;
  }

  private arm(): void {
    if (!this.running || this.cancel !== undefined) return;
    const { clock } = this.services;
    this.cancel = clock.at(clock.now() + this.liveness.checkEveryMs, async () => {
      this.cancel = undefined;
      await this.sweep();
      this.arm();
    });
  }

  private async pass(): Promise<void> {
    // Our own heartbeat lapsed too (a Redis outage): every other instance may look dead; wait a lease.
    if (!this.liveness.canJudge()) return;
    let lost: ProcessRecord[];
    try {
      lost = await this.lostRecords();
    } catch (error) {
      this.services.logger.warn({ err: messageOf(error) }, 'terminal: could not look for the commands of lost instances; looking again shortly');
      return;
    }
    for (const record of lost) {
      try {
        await this.reportLost(record);
      } catch (error) {
        // The claim expires after a lease: this or another instance tries again then.
        this.services.logger.warn({ err: messageOf(error), process: record.id }, 'terminal: could not report a command lost with its instance; retrying after the lease');
      }
    }
  }

  /** The records of other instances whose heartbeat expired; each instance asked once a pass. */
  private async lostRecords(): Promise<ProcessRecord[]> {
    const others = (await this.services.store.processes.all()).filter((record) => record.instance !== undefined && record.instance !== this.self);
    const alive = new Map<string, boolean>();
    const lost: ProcessRecord[] = [];
    for (const record of others) {
      const instance = record.instance!;
      if (!alive.has(instance)) alive.set(instance, await this.liveness.isAlive(instance));
      if (alive.get(instance) === false) lost.push(record);
    }
    return lost;
  }

  private async reportLost(seen: ProcessRecord): Promise<void> {
    if (!this.running || !(await this.liveness.claimLost(seen.id))) return;
    // Read again under the claim: another instance may have reported it since the list was read.
    const record = await this.services.store.processes.get(seen.id);
    if (record === undefined || record.instance !== seen.instance) return;
    const instance = record.instance!;
    const { logger, clock } = this.services;
    if (record.exit === undefined) await this.services.store.processes.ended(record.id, { endedAt: clock.now(), note: lostNote(instance) });
    // An end recorded by an earlier try of this report is no end the lost instance saw.
    const exit = record.exit?.note === lostNote(instance) ? undefined : record.exit;
    if (record.notifyOnComplete) {
      const text = lostText({ id: record.id, command: record.command, instance, runMs: (exit?.endedAt ?? clock.now()) - record.startedAt, exit });
      try {
        // The watcher's notice id: a report retried after a crash, or made twice, is recorded once.
        await deliverLater(this.services.deliverer, record.origin, 'terminal.notify', { id: `proc:${record.id}:done`, kind: 'notification', text });
      } catch (error) {
        if (isTransientFailure(error)) throw error;
        // Waiting cannot help (its platform is no longer enabled, say): dropped once logged, as the watcher does.
        logger.error({ err: messageOf(error), process: record.id }, `terminal: the loss of ${record.id} cannot be reported; dropped`);
      }
    }
    logger.warn({ process: record.id, instance }, `terminal: ${record.id} was lost with its instance ${instance}; reported to its chat`);
    await this.services.store.processes.remove(record.id);
  }
}
