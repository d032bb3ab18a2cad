/**
 * What the instance doing a lease's work leaves for whoever does it next: one value a name
 * (the Discord Gateway session to resume), in Redis with several instances, in the data dir
 * with one. Best-effort: a value lost or stale costs a fresh start, never a wrong one.
 */
export interface HandoverState {
  /** The value last written, or undefined when there is none (or it could not be read). */
  read(): Promise<string | undefined>;
  write(value: string): Promise<void>;
}

/** The handover state of `name` (such as `discord-gateway`). */
export type HandoverStateFactory = (name: string) => HandoverState;
