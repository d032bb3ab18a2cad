import type { ProcessExit } from '../../store/store.js';

/** A command is quoted in replies up to this many characters. */
const COMMAND_CHARS = 200;

/** `1h 2m`, `3m 4s`, `5.2s`: a run time a user reads at a glance. */
export function formatDuration(ms: number): string {
  const seconds = Math.max(0, ms) / 1000;
  if (seconds < 60) return `${seconds < 10 ? seconds.toFixed(1) : Math.round(seconds)}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes}m ${Math.floor(seconds % 60)}s`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `${hours}h ${minutes % 60}m`;
  return `${Math.floor(hours / 24)}d ${hours % 24}h`;
}

/** The command as quoted back: one line, shortened. */
export function quoteCommand(command: string): string {
  const line = command.replace(/\s+/g, ' ').trim();
  return line.length > COMMAND_CHARS ? `${line.slice(0, COMMAND_CHARS - 1)}…` : line;
}

/** `exit 0`, `killed by SIGTERM`, or the note of an end nobody saw. */
export function describeExit(exit: ProcessExit): string {
  if (exit.code !== undefined) return `exit ${exit.code}`;
  if (exit.signal !== undefined) return `ended by ${exit.signal}`;
  return exit.note ?? 'exit status unknown';
}

/** The output part of a message: the tail, with what was left out said. */
export function outputSection(tail: string, droppedChars: number, cappedAtBytes?: number): string {
  const notes: string[] = [];
  if (droppedChars > 0) notes.push(`last ${tail.length} characters shown`);
  if (cappedAtBytes !== undefined) notes.push(`output cut at ${cappedAtBytes} bytes, the rest read and discarded`);
  const header = notes.length === 0 ? '' : `(${notes.join('; ')})\n`;
  return tail === '' ? `${header}(no output)` : `${header}${tail}`;
}

export interface EndFacts {
  readonly id: string;
  readonly command: string;
  readonly exit: ProcessExit;
  readonly runMs: number;
  readonly killed: boolean;
  readonly tail: string;
  readonly droppedChars: number;
  readonly cappedAtBytes?: number | undefined;
}

/** The notification of a background command's end. */
export function endText(facts: EndFacts): string {
  const how = facts.killed ? `was killed with /kill (${describeExit(facts.exit)})` : `finished: ${describeExit(facts.exit)}`;
  const note = facts.exit.note !== undefined && (facts.exit.code !== undefined || facts.exit.signal !== undefined) ? ` (${facts.exit.note})` : '';
  return [
    `Process ${facts.id} ${how}${note}, after ${formatDuration(facts.runMs)}`,
    `$ ${quoteCommand(facts.command)}`,
    outputSection(facts.tail, facts.droppedChars, facts.cappedAtBytes),
  ].join('\n');
}

export interface LostFacts {
  readonly id: string;
  readonly command: string;
  /** The instance whose heartbeat expired. */
  readonly instance: string;
  /** From its start to its recorded end, or to when its instance was found lost. */
  readonly runMs: number;
  /** Its end, when that instance recorded one before it was lost. */
  readonly exit?: ProcessExit | undefined;
}

/** The notification of a background command whose instance died: its end was never seen, or never reported. */
export function lostText(facts: LostFacts): string {
  const what =
    facts.exit === undefined
      ? `was lost with its instance ${facts.instance}, ${formatDuration(facts.runMs)} after it started; its final status is unknown`
      : `finished (${describeExit(facts.exit)}) after ${formatDuration(facts.runMs)}, but its instance ${facts.instance} was lost before reporting it; its output is not available`;
  return [`Process ${facts.id} ${what}`, `$ ${quoteCommand(facts.command)}`].join('\n');
}

/** A progress update of a command still running. */
export function progressText(id: string, command: string, runMs: number, tail: string, droppedChars: number): string {
  return [`Process ${id} still running, ${formatDuration(runMs)} so far`, `$ ${quoteCommand(command)}`, outputSection(tail, droppedChars)].join('\n');
}
