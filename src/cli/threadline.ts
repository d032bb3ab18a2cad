#!/usr/bin/env node
/**
 * The `threadline` command: `start` (the default) runs the gateway, `config` shows its
 * settings, `doctor` checks what start-up needs, `deliveries` inspects and retries its outbox,
 * `send` sends through it from a script, `schedules` lists and removes jobs across chats, `misroutes` and `trace` read its traces back.
 * Exit codes: 0 done, 1 failed (invalid setting, failed check, not found, no store; for
 * misroutes: problems found), 2 bad usage (and an unreadable trace store).
 */
import { realpathSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { Command, CommanderError } from 'commander';
import pc from 'picocolors';
import { VERSION } from '../version.js';
import { registerConfig } from './config.js';
import { registerDeliveries } from './deliveries.js';
import { registerDoctor, type DoctorOptions } from './doctor.js';
import { registerMisroutes } from './misroutes.js';
import { registerSchedules } from './schedules.js';
import { registerSend } from './send.js';
import { registerTrace } from './trace.js';
import type { CliIo } from './io.js';

function buildProgram(io: CliIo, doctor: DoctorOptions = {}): Command {
  // Settings before any subcommand: commander copies them into each one as it is created.
  const program = new Command('threadline')
    .description('A chat gateway that carries each conversation\'s routing inside the OpenTelemetry trace context.')
    .version(VERSION)
    .exitOverride()
    .configureOutput({ writeOut: (text) => io.out(text), writeErr: (text) => io.err(text) })
    .showHelpAfterError('(add --help for usage)');
  program
    .command('start')
    .description('start the gateway (the default), configured by environment variables: see threadline config')
    .option('--config <path>', 'the gateway module with your tools, agent and MCP servers (THREADLINE_CONFIG; default ./threadline.config.js)')
    .action(async (options: { config?: string }) => {
      if (options.config !== undefined) process.env['THREADLINE_CONFIG'] = options.config;
      // The telemetry bootstrap must patch http before the gateway's modules load it.
      await import('../telemetry/register.js');
      await import('./main.js');
    });
  registerConfig(program, io);
  registerDoctor(program, io, doctor);
  registerDeliveries(program, io);
  registerSend(program, io);
  registerSchedules(program, io);
  registerMisroutes(program, io);
  registerTrace(program, io);
  return program;
}

/** Runs the program on `argv` (without node and script) and says its exit code. */
export async function runThreadline(argv: readonly string[], io: CliIo, doctor: DoctorOptions = {}): Promise<number> {
  try {
    // Not commander's isDefault, which would take a mistyped command for start's argument.
    await buildProgram(io, doctor).parseAsync(argv.length === 0 ? ['start'] : argv, { from: 'user' });
    return 0;
  } catch (error) {
    if (!(error instanceof CommanderError)) throw error;
    if (error.exitCode === 0) return 0;
    // Our own failures carry their code; everything commander refuses is a usage error.
    return error.code.startsWith('threadline.') ? error.exitCode : 2;
  }
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
    color: process.stdout.isTTY === true && pc.isColorSupported,
  });
}
