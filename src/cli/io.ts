/** Where a command writes (text as written, newlines included) and the environment it reads. */
export interface CliIo {
  out(text: string): void;
  err(text: string): void;
  readonly env: NodeJS.ProcessEnv;
  /** Colour marks: true when writing to a terminal that shows colours. */
  readonly color?: boolean;
}
