import { mkdirSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino, type Logger } from 'pino';
import { readSkillFile, type ReadSkillFile } from '../../../src/tools/skills/skill-directory.js';
import { useTempDir } from '../../helpers/temp-dir.js';

/** A factory of fresh, empty skill directories under one temp dir removed after the file. */
export function useSkillDirs(): () => string {
  const root = useTempDir('skills');
  let count = 0;
  return () => {
    const dir = join(root(), `dir-${count++}`);
    mkdirSync(dir);
    return dir;
  };
}

/** Writes `<dir>/<fileName>` from front matter lines and a body. */
export function writeSkill(dir: string, fileName: string, frontMatter: string, body = 'Do the thing.'): string {
  const path = join(dir, fileName);
  writeFileSync(path, `---\n${frontMatter}\n---\n${body}\n`);
  return path;
}

/** Sets a file's mtime `seconds` after the epoch, so a rewrite of the same size still reads as changed. */
export function touch(path: string, seconds: number): void {
  utimesSync(path, seconds, seconds);
}

export interface LogRecord {
  readonly level: number;
  readonly msg: string;
  readonly skillFile?: string;
  readonly reason?: string;
}

/** A pino logger writing its records into the returned array. */
export function captureLogger(): { logger: Logger; records: LogRecord[]; warnings: () => LogRecord[] } {
  const records: LogRecord[] = [];
  const logger = pino({ level: 'debug' }, { write: (line: string) => void records.push(JSON.parse(line) as LogRecord) });
  return { logger, records, warnings: () => records.filter((record) => record.level === 40) };
}

/** The real file read, counting its calls per file name. */
export function countingReader(): { readFile: ReadSkillFile; reads: (fileName?: string) => number } {
  const counts = new Map<string, number>();
  return {
    readFile: (path, maxBytes) => {
      const name = path.split('/').pop()!;
      counts.set(name, (counts.get(name) ?? 0) + 1);
      return readSkillFile(path, maxBytes);
    },
    reads: (fileName) => (fileName === undefined ? [...counts.values()].reduce((a, b) => a + b, 0) : (counts.get(fileName) ?? 0)),
  };
}

/** A time source a test moves by hand. */
export function manualTime(): { now: () => number; advance: (ms: number) => void } {
  let time = 1_000_000;
  return { now: () => time, advance: (ms) => void (time += ms) };
}
