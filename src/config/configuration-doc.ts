/**
 * docs/configuration.md, rendered from the settings table; `npm run docs:config` writes it
 * and a test fails when the committed file differs.
 */
import { SESSION_ENV } from '../session/session-env.js';
import { SETTING_GROUPS, SETTINGS, SETTING_NAMES, type Setting, type SettingGroup } from './settings.js';

export const CONFIGURATION_DOC_PATH = 'docs/configuration.md';

export function renderConfigurationDoc(): string {
  const sections = (Object.entries(SETTING_GROUPS) as [SettingGroup, string][]).map(([group, heading]) => {
    const rows = SETTING_NAMES.filter((name) => SETTINGS[name].group === group).map((name) => {
      const setting: Setting = SETTINGS[name];
      const meaning = setting.secret ? `**secret**; ${setting.description}` : setting.description;
      return `| \`${name}\` | ${cell(defaultOf(setting))} | ${cell(valuesOf(setting))} | ${cell(meaning)} |`;
    });
    return [`## ${heading}`, '', '| variable | default | values | meaning |', '|---|---|---|---|', ...rows].join('\n');
  });
  return [
    '# Configuration',
    '',
    '<!-- Generated from src/config/settings.ts by `npm run docs:config`: edit the table there, not this file. -->',
    '',
    'threadline reads these environment variables once, at start-up. A value it cannot use stops',
    'it with a message naming the variable (`TL_CONFIG_INVALID`); an empty value counts as unset.',
    '`threadline config` prints every setting with the value in force, where it came from',
    '(environment or default) and its default, secrets as `(set)` (the Redis URL with its',
    'password masked) and lists of people (`THREADLINE_ADMINS`) as `(N entries)`; add `--json`',
    'for a script.',
    '`threadline doctor` checks the configuration, the data dir and its lock, the store, the',
    'shared Redis when `THREADLINE_REDIS_URL` is set, the Discord bot token and its Message',
    'Content Intent when `THREADLINE_DISCORD_BOT_TOKEN` is set, where telemetry goes and the',
    'context manager, one line each, and exits 1 if any fails.',
    '',
    ...sections.flatMap((section) => [section, '']),
    sessionSection(),
  ].join('\n');
}

function sessionSection(): string {
  const rows = Object.entries(SESSION_ENV).map(([name, field]) => `| \`${name}\` | \`${field}\` |`);
  return [
    '## Session variables (code outside the gateway)',
    '',
    'The gateway does not read these. Child processes and code outside the gateway read them',
    'through `sessionEnv(name, fallback)`: the active session first, then the environment, then',
    'the fallback; inside a session the environment is never consulted, so a field the session',
    "has no value for stays empty. `childProcessEnv()` gives a child its own session's values",
    '(all but the user name and the message id) and drops any inherited ones.',
    '',
    '| variable | session field |',
    '|---|---|',
    ...rows,
    '',
  ].join('\n');
}

function defaultOf(setting: Setting): string {
  if (setting.defaultText !== undefined) return setting.defaultText;
  if (setting.kind === 'flag') return '`0`';
  return setting.default === undefined ? 'unset' : `\`${setting.default}\``;
}

function valuesOf(setting: Setting): string {
  switch (setting.kind) {
    case 'integer':
      return `${setting.min} to ${setting.max}${setting.fractional ? ', fractions too' : ''}`;
    case 'flag':
      return '`1`/`true` or `0`/`false`';
    case 'choice':
      return setting.choices.map((choice) => `\`${choice}\``).join(', ');
    case 'url':
      return 'an http(s) URL';
    case 'redis-url':
      return 'a `redis://` or `rediss://` (TLS) URL';
    case 'text':
      return setting.format ?? 'text';
  }
}

/** A table cell: a `|` would end it. */
function cell(text: string): string {
  return text.replaceAll('|', '\\|');
}
