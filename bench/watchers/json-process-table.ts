import { formatDestination, type Destination } from '../../src/session/delivery.js';
import type { BackgroundCaps, CappedAdd, ProcessExit, ProcessRecord, ProcessTable, UnreportedProcess } from '../../src/store/store.js';

/** The processes table as rows of JSON in memory: the store's share of the heap, weighed apart from the watchers'. */
export class JsonProcessTable implements ProcessTable {
  readonly rows = new Map<string, string>();

  async add(record: ProcessRecord): Promise<CappedAdd>;
  async add(record: ProcessRecord, _caps?: BackgroundCaps): Promise<CappedAdd> {
    this.rows.set(record.id, JSON.stringify(record));
    return { status: 'added' };
  }

  async get(id: string): Promise<ProcessRecord | undefined> {
    const row = this.rows.get(id);
    return row === undefined ? undefined : (JSON.parse(row) as ProcessRecord);
  }

  async all(): Promise<ProcessRecord[]> {
    return [...this.rows.values()].map((row) => JSON.parse(row) as ProcessRecord);
  }

  async ofDestination(destination: Destination): Promise<ProcessRecord[]> {
    return (await this.all()).filter((record) => formatDestination(record.destination) === formatDestination(destination));
  }

  async ended(id: string, exit: ProcessExit): Promise<void> {
    const record = await this.get(id);
    if (record !== undefined) this.rows.set(id, JSON.stringify({ ...record, exit }));
  }

  async progressed(id: string, progressSent: number): Promise<void> {
    const record = await this.get(id);
    if (record !== undefined) this.rows.set(id, JSON.stringify({ ...record, progressSent }));
  }

  /** The forensics read; no test of this stand-in's users asks it. */
  async unreported(): Promise<UnreportedProcess[]> {
    throw new Error('not kept by this stand-in');
  }

  async remove(id: string): Promise<void> {
    this.rows.delete(id);
  }
}
