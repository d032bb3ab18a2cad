#!/usr/bin/env node
/**
 * The `threadline` command: `start` runs the gateway, `deliveries` inspects and retries its
 * outbox. Exit codes: 0 done, 1 not found or no store, 2 bad usage.
 */
import { readFileSync, realpathSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { Command, CommanderError } from 'commander';
import { registerDeliveries, type CliIo } from './deliveries.js';

export type { CliIo } from './deliveries.js';

export function buildProgram(io: CliIo): Command {
  // Settings before any subcommand: commander copies them into each one as it is created.
  const program = new Command('threadline')
    .description('A chat gateway that carries each conversation\'s routing inside the OpenTelemetry trace context.')
    .version(packageVersion())
    .exitOverride()
    .configureOutput({ writeOut: (text) => io.out(text), writeErr: (text) => io.err(text) })
    .showHelpAfterError('(add --help for usage)');
  program
    .command('start')
    .description('start the gateway, configured by THREADLINE_* variables (see the README)')
    .action(async () => {
      // The telemetry bootstrap must patch http before the gateway's modules load it.
      await import('../telemetry/register.js');
      await import('./main.js');
    });
  registerDeliveries(program, io);
  return program;
}

/** Runs the program on `argv` (without node and script) and says its exit code. */
export async function runThreadline(argv: readonly string[], io: CliIo): Promise<number> {
  try {
    await buildProgram(io).parseAsync(argv, { from: 'user' });
    return 0;
  } catch (error) {
    if (!(error instanceof CommanderError)) throw error;
    if (error.exitCode === 0) return 0;
    // Our own failures carry their code; everything commander refuses is a usage error.
    return error.code.startsWith('threadline.') ? error.exitCode : 2;
  }
}

function packageVersion(): string {
  const url = new URL('../../package.json', import.meta.url);
  return (JSON.parse(readFileSync(url, 'utf8')) as { version: string }).version;
}

/** True when node runs this file (also through npm's bin symlink), not when a test imports it. */
function isEntryPoint(): boolean {
  const script = process.argv[1];
  if (script === undefined) return false;
  try {
    return pathToFileURL(realpathSync(script)).href === import.meta.url;
  } catch {
    return false;
  }
}

if (isEntryPoint()) {
  // exitCode, not exit(): `start` keeps the process running, and stdout must drain.
  process.exitCode = await runThreadline(process.argv.slice(2), {
    out: (text) => process.stdout.write(text),
    err: (text) => process.stderr.write(text),
    env: process.env,
  });
}
