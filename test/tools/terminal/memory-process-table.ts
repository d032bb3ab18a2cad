import { formatDestination, type Destination } from '../../../src/session/delivery.js';
import type { BackgroundCaps, CappedAdd, ProcessExit, ProcessRecord, ProcessTable, UnreportedProcess } from '../../../src/store/store.js';

/** The processes table in memory, records kept as JSON as a database would: a test's stand-in for SQLite. */
export class MemoryProcessTable implements ProcessTable {
  private readonly rows = new Map<string, string>();

  async add(record: ProcessRecord, caps: BackgroundCaps): Promise<CappedAdd> {
    const all = await this.all();
    const ofDestination = all.filter((other) => formatDestination(other.destination) === formatDestination(record.destination)).length;
    if (ofDestination >= caps.maxPerDestination) return { status: 'full', scope: 'destination', open: ofDestination };
    if (all.length >= caps.maxTotal) return { status: 'full', scope: 'total', open: all.length };
    this.rows.set(record.id, JSON.stringify(record));
    return { status: 'added' };
  }

  async get(id: string): Promise<ProcessRecord | undefined> {
    const row = this.rows.get(id);
    return row === undefined ? undefined : (JSON.parse(row) as ProcessRecord);
  }

  async all(): Promise<ProcessRecord[]> {
    return [...this.rows.values()].map((row) => JSON.parse(row) as ProcessRecord).sort((a, b) => a.startedAt - b.startedAt);
  }

  async ofDestination(destination: Destination): Promise<ProcessRecord[]> {
    return (await this.all()).filter((record) => formatDestination(record.destination) === formatDestination(destination));
  }

  async ended(id: string, exit: ProcessExit): Promise<void> {
    await this.update(id, (record) => ({ ...record, exit }));
  }

  async progressed(id: string, progressSent: number): Promise<void> {
    await this.update(id, (record) => ({ ...record, progressSent }));
  }

  /** The forensics read; no test of this stand-in's users asks it. */
  async unreported(): Promise<UnreportedProcess[]> {
    throw new Error('not kept by this stand-in');
  }

  async remove(id: string): Promise<void> {
    this.rows.delete(id);
  }

  private async update(id: string, change: (record: ProcessRecord) => ProcessRecord): Promise<void> {
    const record = await this.get(id);
    if (record !== undefined) this.rows.set(id, JSON.stringify(change(record)));
  }
}
