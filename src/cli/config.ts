/**
 * `threadline config`: every setting with the value in force, where it came from and its
 * default, then every problem; exit 1 when the gateway would refuse to start.
 */
import { CommanderError, type Command } from 'commander';
import { describeConfiguration, type SettingState } from '../start/describe-settings.js';
import { SETTING_GROUPS, type SettingGroup } from '../config/settings.js';
import type { CliIo } from './io.js';
import { printable } from '../text/printable.js';

interface ConfigOptions {
  readonly json?: true;
}

export function registerConfig(program: Command, io: CliIo): void {
  program
    .command('config')
    .description('show every setting: its value, where it came from (environment or default) and its default')
    .option('--json', 'print a JSON array instead of text')
    .addHelpText('after', '\nSecrets show as (set), never their value; lists of people as (N entries). Every setting: docs/configuration.md.\n')
    .action((options: ConfigOptions) => {
      const { settings, errors } = describeConfiguration(io.env);
      io.out(options.json ? toJson(settings) : toText(settings));
      if (errors.length === 0) return;
      for (const error of errors) io.err(`threadline: ${printable(error.message)} [${error.code}]\n`);
      throw new CommanderError(1, 'threadline.failed', `${errors.length} invalid settings`);
    });
}

function toText(settings: readonly SettingState[]): string {
  const nameWidth = Math.max(...settings.map((setting) => setting.name.length));
  const valueWidth = Math.min(40, Math.max(...settings.map((setting) => shown(setting).length)));
  const lines: string[] = [];
  for (const [group, heading] of Object.entries(SETTING_GROUPS) as [SettingGroup, string][]) {
    lines.push(`${lines.length === 0 ? '' : '\n'}${heading}`);
    for (const setting of settings.filter((entry) => entry.group === group)) {
      const from = setting.source === 'environment' ? `environment (default: ${setting.default})` : 'default';
      const problem = setting.error === undefined ? '' : '  INVALID';
      lines.push(`  ${setting.name.padEnd(nameWidth)}  ${shown(setting).padEnd(valueWidth)}  ${from}${problem}`);
    }
  }
  return lines.join('\n') + '\n';
}

function shown(setting: SettingState): string {
  return setting.value === undefined ? 'unset' : printable(setting.value);
}

function toJson(settings: readonly SettingState[]): string {
  const rows = settings.map((setting) => ({
    name: setting.name,
    group: setting.group,
    value: setting.value ?? null,
    source: setting.source,
    default: setting.default,
    secret: setting.secret,
    personal: setting.personal,
    ...(setting.error === undefined ? {} : { error: setting.error }),
  }));
  return JSON.stringify(rows, null, 2) + '\n';
}
