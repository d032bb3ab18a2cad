import { commaList } from '../env-vars.js';
import { ConfigError } from '../errors.js';
import { isSecretVariable, isUrlSetting } from '../config/secret-variables.js';
import { resolveRunAs, type RunAs } from './terminal/run-as.js';
import { readFlag, readInteger, readText, readUrl } from '../config/read-setting.js';
import { join } from 'node:path';
import { readMcpServersFile, type McpServers } from './mcp/mcp-servers-config.js';

export interface TerminalConfig {
  /** THREADLINE_TERMINAL=1. */
  readonly enabled: boolean;
  readonly timeoutMs: number;
  readonly tailChars: number;
  readonly outputMaxBytes: number;
  readonly minCheckIntervalMs: number;
  readonly maxPerChat: number;
  readonly maxTotal: number;
  /** THREADLINE_TERMINAL_ENV: further variables a command gets. */
  readonly passedEnv: readonly string[];
  /** THREADLINE_TERMINAL_USER: the account commands run as; undefined: the gateway's own. */
  readonly runAs?: RunAs | undefined;
}

export interface CronConfig {
  /** Reminders one chat may have, across its threads. */
  readonly maxPerChat: number;
  /** Reminders one sender may have, across chats. */
  readonly maxPerUser: number;
  readonly maxTotal: number;
  /** Of maxTotal, the jobs only admins' (`schedule`, `/cron`) may take. */
  readonly adminReserve: number;
}

export interface SkillsConfig {
  readonly dir: string;
  /** Per platform, the skills left out; `*` holds those left out everywhere. */
  readonly disabled: ReadonlyMap<string, ReadonlySet<string>>;
}

export interface TtsConfig {
  readonly voice: string;
  readonly maxChars: number;
}

export interface LlmConfig {
  readonly baseUrl: string;
  readonly model: string;
  readonly apiKey: string | undefined;
  readonly timeoutMs: number;
  readonly maxToolRounds: number;
  readonly historyMessages: number;
}

export interface McpConfig {
  /** From the THREADLINE_MCP_SERVERS file; {} when unset. */
  readonly servers: McpServers;
  readonly timeoutMs: number;
}

export interface ToolsConfig {
  readonly terminal: TerminalConfig;
  readonly cron: CronConfig;
  readonly skills: SkillsConfig;
  readonly tts: TtsConfig;
  readonly mcp: McpConfig;
  /** Present when THREADLINE_LLM_BASE_URL is set. */
  readonly llm: LlmConfig | undefined;
}

/** The tools' configuration, read once at start-up through the settings table. */
export function readToolsConfig(env: NodeJS.ProcessEnv, dataDir: string): ToolsConfig {
  return {
    terminal: {
      enabled: readFlag(env, 'THREADLINE_TERMINAL'),
      timeoutMs: readInteger(env, 'THREADLINE_TERMINAL_TIMEOUT_S') * 1000,
      tailChars: readInteger(env, 'THREADLINE_TERMINAL_TAIL_CHARS'),
      outputMaxBytes: readInteger(env, 'THREADLINE_TERMINAL_OUTPUT_MAX_BYTES'),
      minCheckIntervalMs: readInteger(env, 'THREADLINE_TERMINAL_MIN_CHECK_INTERVAL_S') * 1000,
      maxPerChat: readInteger(env, 'THREADLINE_TERMINAL_MAX_PER_CHAT'),
      maxTotal: readInteger(env, 'THREADLINE_TERMINAL_MAX_TOTAL'),
      passedEnv: passedVariables(env),
      runAs: runAsOf(env),
    },
    cron: cronConfig(env),
    skills: {
      dir: readText(env, 'THREADLINE_SKILLS_DIR') ?? join(dataDir, 'skills'),
      disabled: parseDisabledSkills(readText(env, 'THREADLINE_SKILLS_DISABLED')),
    },
    tts: {
      voice: readText(env, 'THREADLINE_TTS_VOICE'),
      maxChars: readInteger(env, 'THREADLINE_TTS_MAX_CHARS'),
    },
    mcp: mcpConfig(env),
    llm: llmConfig(env),
  };
}

function mcpConfig(env: NodeJS.ProcessEnv): McpConfig {
  const timeoutMs = readInteger(env, 'THREADLINE_MCP_TIMEOUT_MS');
  const path = readText(env, 'THREADLINE_MCP_SERVERS');
  return { servers: path === undefined ? {} : readMcpServersFile(path, 'THREADLINE_MCP_SERVERS'), timeoutMs };
}

function llmConfig(env: NodeJS.ProcessEnv): LlmConfig | undefined {
  // All read before the URL decides: a bad value is refused even with the model off.
  const model = readText(env, 'THREADLINE_LLM_MODEL');
  const apiKey = readText(env, 'THREADLINE_LLM_API_KEY');
  const timeoutMs = readInteger(env, 'THREADLINE_LLM_TIMEOUT_MS');
  const maxToolRounds = readInteger(env, 'THREADLINE_LLM_MAX_TOOL_ROUNDS');
  const historyMessages = readInteger(env, 'THREADLINE_LLM_HISTORY_MESSAGES');
  const baseUrl = readUrl(env, 'THREADLINE_LLM_BASE_URL');
  if (baseUrl === undefined) return undefined;
  return { baseUrl: baseUrl.replace(/\/$/, ''), model, apiKey, timeoutMs, maxToolRounds, historyMessages };
}

/** `platform:skill` entries, `*:skill` for every platform. */
export function parseDisabledSkills(value: string | undefined): ReadonlyMap<string, ReadonlySet<string>> {
  const disabled = new Map<string, Set<string>>();
  for (const item of commaList(value)) {
    const match = /^([a-z*][a-z0-9_-]*):([A-Za-z0-9_.-]+)$/.exec(item);
    if (match === null || (match[1]!.includes('*') && match[1] !== '*')) {
      throw new ConfigError('THREADLINE_SKILLS_DISABLED', `"${item.slice(0, 80)}" is not platform:skill (or *:skill)`);
    }
    const names = disabled.get(match[1]!) ?? new Set<string>();
    names.add(match[2]!);
    disabled.set(match[1]!, names);
  }
  return disabled;
}

function cronConfig(env: NodeJS.ProcessEnv): CronConfig {
  const maxTotal = readInteger(env, 'THREADLINE_CRON_MAX_TOTAL');
  return {
    maxPerChat: readInteger(env, 'THREADLINE_CRON_MAX_PER_CHAT'),
    maxPerUser: readInteger(env, 'THREADLINE_CRON_MAX_PER_USER'),
    maxTotal,
    // Rounded down, so a gateway with a tiny cap still leaves reminders room.
    adminReserve: Math.floor((maxTotal * readInteger(env, 'THREADLINE_CRON_ADMIN_RESERVE_PERCENT')) / 100),
  };
}

/** THREADLINE_TERMINAL_ENV: names of variables, none of them a secret, a URL setting or the admins. */
function passedVariables(env: NodeJS.ProcessEnv): string[] {
  const names = commaList(readText(env, 'THREADLINE_TERMINAL_ENV'));
  for (const name of names) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new ConfigError('THREADLINE_TERMINAL_ENV', `"${name.slice(0, 80)}" is not a variable name`);
    if (isSecretVariable(name) || isUrlSetting(name) || name === 'THREADLINE_ADMINS') {
      throw new ConfigError('THREADLINE_TERMINAL_ENV', `${name} holds a secret, a URL or the admins, which a command could print into a chat; it is never passed`);
    }
  }
  return names;
}

/** THREADLINE_TERMINAL_USER, resolved only when the terminal is on (it asks the account database). */
function runAsOf(env: NodeJS.ProcessEnv): RunAs | undefined {
  const spec = readText(env, 'THREADLINE_TERMINAL_USER');
  return spec === undefined || !readFlag(env, 'THREADLINE_TERMINAL') ? undefined : resolveRunAs(spec);
}
