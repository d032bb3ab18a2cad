import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { messageOf } from '../../errors.js';
import { runDetached } from '../../session/index.js';
import type { ProcessExit, ProcessRecord } from '../../store/store.js';
import { systemClock } from '../clock.js';
import { deliverLater } from '../deliver-later.js';
import { isTransientFailure } from '../delivery-failure.js';
import type { BackgroundWork, ToolServices } from '../tool-services.js';
import type { TerminalConfig } from '../tools-config.js';
import { endText, progressText } from './notification-text.js';
import { isWrapperAlive, terminateGroup } from './process-group.js';
import { isProcessId } from './process-id.js';
import { LostInstanceSweep } from './lost-instances.js';
import { markKilled, processDir, readOutputTail, readStatus, removeProcessDir, wasKilled } from './process-files.js';
import { SharedSchedule } from './shared-schedule.js';
import type { SpawnedProcess } from './spawner.js';

/** How often adopted commands (not children of this process: no exit event) are checked. */
export const ADOPTED_SWEEP_MS = 1000;

/** Progress updates due at once are sent this many at a time, so 10,000 due together never flood the loop. */
const TICK_BATCH = 16;

const UNKNOWN_WHILE_DOWN = 'ended while the gateway was down; exit status unknown';
const UNKNOWN_WRAPPER_KILLED = 'its wrapper was killed; exit status unknown';

type ExitListener = (code: number | null, signal: NodeJS.Signals | null) => void;

/**
 * One watched command, kept small (a live watcher costs well under 2 KiB): what the record in
 * the store holds (command, origin) is read back when a message is composed, not kept here.
 */
interface Watch {
  readonly id: string;
  readonly pid: number;
  readonly intervalMs: number | undefined;
  progressSent: number;
  nextTickAt: number;
  /** The wrapper, while this process is its parent and listens for its exit; undefined once adopted. */
  child: SpawnedProcess | undefined;
  onExit: ExitListener | undefined;
  /** Its end is being reported: no more progress, no second report. */
  ending: boolean;
  ticking: Promise<void> | undefined;
}

/**
 * The watchers of background commands: each reports its command's end (and progress) to the
 * chat that started it, from the routing captured at spawn, never from the context active when
 * an exit event fires. Commands outlive the gateway; start() adopts what an earlier process left.
 */
export class TerminalWatchers implements BackgroundWork {
  private readonly watches = new Map<string, Watch>();
  /** Watches without an exit event, checked by the one sweep. */
  private readonly adopted = new Set<Watch>();
  private readonly progress: SharedSchedule<Watch>;
  private readonly inFlight = new Set<Promise<void>>();
  private readonly killTimers = new Set<() => void>();
  private cancelSweep: (() => void) | undefined;
  private running = false;
  /** Set by adopt(): the adopted commands found ended, which start() reports. */
  private adoption: Watch[] | undefined;
  /** Reports other instances' commands when their instance dies; undefined when one gateway runs them all. */
  readonly lostInstances: LostInstanceSweep | undefined;

  constructor(
    private readonly services: ToolServices,
    private readonly config: TerminalConfig,
  ) {
    this.progress = new SharedSchedule(services.clock, (due) => this.tickAll(due));
    const { instance, instances } = services;
    this.lostInstances = instance === undefined || instances === undefined ? undefined : new LostInstanceSweep(services, instances, instance);
  }

  /** Watchers now, for a test or a bench. */
  get size(): number {
    return this.watches.size;
  }

  /**
   * Takes over what an earlier process left, before any message runs: the records of this
   * instance's commands become watches, and directories no record names are removed. Sends
   * nothing (start() reports the ends found). Run first, a replayed turn's new command is never
   * taken for a leftover: its directory is not removed under it, nor its record read half made.
   */
  async adopt(): Promise<void> {
    if (this.adoption !== undefined) return;
    const ended: Watch[] = [];
    const records = (await this.services.store.processes.all()).filter((record) => this.runsHere(record));
    for (const record of records) {
      if (this.watches.has(record.id)) continue;
      const watch = this.addWatch(record);
      const dir = this.dirOf(record.id);
      if (record.exit !== undefined || (await readStatus(dir)) !== undefined || !isWrapperAlive(record.pid, dir)) ended.push(watch);
      else this.adopted.add(watch);
    }
    await this.removeOrphanDirs(new Set(records.map((record) => record.id)));
    this.adoption = ended;
  }

  /** Adopts (unless adopt() ran), reports the commands that ended while no gateway watched, and starts the timers. */
  async start(): Promise<void> {
    await this.adopt();
    this.running = true;
    for (const watch of this.adoption ?? []) this.finish(watch, UNKNOWN_WHILE_DOWN);
    this.adoption = [];
    this.progress.start();
    this.armSweep();
    await this.lostInstances?.start();
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.lostInstances?.stop();
    this.progress.stop();
    this.cancelSweep?.();
    this.cancelSweep = undefined;
    for (const cancel of this.killTimers) cancel();
    this.killTimers.clear();
    for (const watch of this.watches.values()) this.detach(watch);
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
    this.watches.clear();
    this.adopted.clear();
    this.adoption = undefined;
  }

  /** Watches a command this process just spawned: its wrapper's exit reports the end. */
  watchLive(record: ProcessRecord, child: SpawnedProcess): void {
    const watch = this.addWatch(record);
    // Run from the root context: an exit event carries whatever context spawned the wrapper.
    const onExit: ExitListener = (_code, signal) => runDetached(() => this.finish(watch, UNKNOWN_WRAPPER_KILLED, signal ?? undefined));
    watch.child = child;
    watch.onExit = onExit;
    child.once('exit', onExit);
  }

  /** Whether this instance's host runs it: another instance's pid means nothing here. */
  runsHere(record: ProcessRecord): boolean {
    return record.instance === undefined || record.instance === this.services.instance;
  }

  /** /kill: marks it killed (the notification says so, even after a restart), then TERM, then KILL. */
  async kill(record: ProcessRecord): Promise<void> {
    await markKilled(this.dirOf(record.id));
    const cancel = terminateGroup(record.pid, systemClock);
    this.killTimers.add(cancel);
    // Adopted: no exit event will come, so the sweep looks soon.
    this.armSweep();
  }

  private dirOf(id: string): string {
    return processDir(this.services.dataDir, id);
  }

  private addWatch(record: ProcessRecord): Watch {
    const interval = record.checkIntervalMs;
    const watch: Watch = {
      id: record.id,
      pid: record.pid,
      intervalMs: interval,
      progressSent: record.progressSent,
      // After a restart the numbering goes on, and missed updates are not sent in a burst.
      nextTickAt: interval === undefined ? 0 : Math.max(record.startedAt + (record.progressSent + 1) * interval, this.services.clock.now()),
      child: undefined,
      onExit: undefined,
      ending: false,
      ticking: undefined,
    };
    this.watches.set(record.id, watch);
    if (interval !== undefined) this.progress.add(watch.nextTickAt, watch);
    return watch;
  }

  private detach(watch: Watch): void {
    if (watch.child !== undefined && watch.onExit !== undefined) watch.child.off('exit', watch.onExit);
    watch.child = undefined;
    watch.onExit = undefined;
  }

  private armSweep(): void {
    if (!this.running || this.cancelSweep !== undefined || this.adopted.size === 0) return;
    this.cancelSweep = this.services.clock.at(this.services.clock.now() + ADOPTED_SWEEP_MS, () => this.sweep());
  }

  /** One pass over the adopted commands: a status file, or a wrapper gone, means the end. */
  private async sweep(): Promise<void> {
    this.cancelSweep = undefined;
    for (const watch of [...this.adopted]) {
      if (watch.ending) continue;
      const dir = this.dirOf(watch.id);
      try {
        if ((await readStatus(dir)) !== undefined || !isWrapperAlive(watch.pid, dir)) this.finish(watch, UNKNOWN_WRAPPER_KILLED);
      } catch (error) {
        this.services.logger.warn({ err: messageOf(error), process: watch.id }, 'terminal: could not check a background command');
      }
    }
    this.armSweep();
  }

  /** Reports the end (unless nobody asked), then forgets the command; a failure is retried by the sweep. */
  private finish(watch: Watch, unknownNote: string, wrapperSignal?: string): void {
    if (watch.ending) return;
    watch.ending = true;
    this.detach(watch);
    this.adopted.delete(watch);
    const work = this.report(watch, unknownNote, wrapperSignal).then(
      () => {
        this.watches.delete(watch.id);
      },
      (error: unknown) => {
        // Retrying a refused destination would log every second and hold a cap slot forever.
        if (!isTransientFailure(error)) return this.drop(watch, error);
        this.services.logger.error(
          { err: messageOf(error), process: watch.id },
          `terminal: could not report the end of ${watch.id}; retrying in ${ADOPTED_SWEEP_MS / 1000}s`,
        );
        watch.ending = false;
        this.adopted.add(watch);
        this.armSweep();
      },
    );
    this.track(work);
  }

  /** Forgets a command whose end can never be reported (its chat's platform is gone, say), once logged. */
  private async drop(watch: Watch, error: unknown): Promise<void> {
    this.services.logger.error({ err: messageOf(error), process: watch.id }, `terminal: the end of ${watch.id} cannot be reported; dropped`);
    this.watches.delete(watch.id);
    try {
      await this.services.store.processes.remove(watch.id);
      await removeProcessDir(this.dirOf(watch.id));
    } catch (failure) {
      // Left in the store: the next start finds it ended and tries once more.
      this.services.logger.warn({ err: messageOf(failure), process: watch.id }, 'terminal: could not remove a dropped command');
    }
  }

  private async report(watch: Watch, unknownNote: string, wrapperSignal: string | undefined): Promise<void> {
    await watch.ticking;
    const table = this.services.store.processes;
    const record = await table.get(watch.id);
    const dir = this.dirOf(watch.id);
    if (record === undefined) return removeProcessDir(dir);
    const killed = await wasKilled(dir);
    let exit = record.exit;
    if (exit === undefined) {
      exit = (await readStatus(dir)) ?? this.unknownExit(killed, unknownNote, wrapperSignal);
      await table.ended(record.id, exit);
    }
    if (record.notifyOnComplete) {
      const { tail, bytes } = await readOutputTail(dir, this.config.tailChars);
      const text = endText({
        id: record.id,
        command: record.command,
        exit,
        runMs: exit.endedAt - record.startedAt,
        killed,
        tail,
        droppedChars: bytes - Buffer.byteLength(tail),
        // The wrapper keeps at most the cap, then its marker: anything more means it cut.
        cappedAtBytes: bytes > this.config.outputMaxBytes ? this.config.outputMaxBytes : undefined,
      });
      // Deterministic id: a crash after this and before remove() never sends it twice.
      await deliverLater(this.services.deliverer, record.origin, 'terminal.notify', { id: `proc:${record.id}:done`, kind: 'notification', text });
    }
    await table.remove(record.id);
    await removeProcessDir(dir);
  }

  private unknownExit(killed: boolean, note: string, signal: string | undefined): ProcessExit {
    const endedAt = this.services.clock.now();
    if (killed) return { signal: signal ?? 'SIGKILL', endedAt };
    return { ...(signal === undefined ? {} : { signal }), endedAt, note };
  }

  private async tickAll(due: Watch[]): Promise<void> {
    for (let index = 0; index < due.length; index += TICK_BATCH) {
      await Promise.all(due.slice(index, index + TICK_BATCH).map((watch) => this.tick(watch)));
    }
  }

  private async tick(watch: Watch): Promise<void> {
    if (watch.ending || watch.intervalMs === undefined || this.watches.get(watch.id) !== watch) return;
    const sending = this.sendProgress(watch).catch((error: unknown) => {
      this.services.logger.warn({ err: messageOf(error), process: watch.id }, 'terminal: a progress update failed; the next one is due after the interval');
    });
    watch.ticking = sending;
    await sending;
    watch.ticking = undefined;
    if (watch.ending || this.watches.get(watch.id) !== watch) return;
    const now = this.services.clock.now();
    const next = watch.nextTickAt + watch.intervalMs;
    watch.nextTickAt = next > now ? next : now + watch.intervalMs;
    this.progress.add(watch.nextTickAt, watch);
  }

  private async sendProgress(watch: Watch): Promise<void> {
    const record = await this.services.store.processes.get(watch.id);
    if (record === undefined || record.exit !== undefined) return;
    const sequence = watch.progressSent + 1;
    const { tail, bytes } = await readOutputTail(this.dirOf(watch.id), this.config.tailChars);
    const text = progressText(record.id, record.command, this.services.clock.now() - record.startedAt, tail, bytes - Buffer.byteLength(tail));
    await deliverLater(this.services.deliverer, record.origin, 'terminal.progress', {
      id: `proc:${record.id}:progress:${sequence}`,
      kind: 'notification',
      text,
    });
    await this.services.store.processes.progressed(record.id, sequence);
    watch.progressSent = sequence;
  }

  private track(work: Promise<void>): void {
    this.inFlight.add(work);
    void work.finally(() => this.inFlight.delete(work));
  }

  /** Directories no record names: left by a crash between spawn and record, or between remove and rm. */
  private async removeOrphanDirs(known: ReadonlySet<string>): Promise<void> {
    const root = join(this.services.dataDir, 'processes');
    let names: string[];
    try {
      names = await readdir(root);
    } catch {
      return;
    }
    for (const name of names) {
      if (isProcessId(name) && !known.has(name) && !this.watches.has(name)) await removeProcessDir(join(root, name));
    }
  }
}
