/**
 * Typed reads of the settings table: each takes the kind, default and bounds from SETTINGS,
 * so a reader cannot disagree with what `threadline config` and the docs say.
 */
import { envFlag, envInteger, envOneOf, envString, envUrl } from '../env-vars.js';
import { SETTINGS, type Setting, type SettingName } from './settings.js';

type Table = typeof SETTINGS;
type NameOfKind<K extends Setting['kind']> = { [N in SettingName]: Table[N]['kind'] extends K ? N : never }[SettingName];
export type ChoiceOf<N extends NameOfKind<'choice'>> = Table[N]['choices'][number];
/** A string when the setting always has a value (a default, or one computed from others). */
type TextOf<N extends SettingName> = Table[N] extends { default: string } | { defaultFrom: (env: NodeJS.ProcessEnv) => string } ? string : string | undefined;

function setting(name: SettingName): Setting {
  return SETTINGS[name];
}

export function readInteger(env: NodeJS.ProcessEnv, name: NameOfKind<'integer'>): number {
  const { min, max, default: fallback, defaultFrom } = setting(name) as Extract<Setting, { kind: 'integer' }>;
  const computed = defaultFrom !== undefined && envString(env, name) === undefined;
  return envInteger(env, name, computed ? defaultFrom(env) : fallback, min, max);
}

export function readFlag(env: NodeJS.ProcessEnv, name: NameOfKind<'flag'>): boolean {
  return envFlag(env, name);
}

export function readChoice<N extends NameOfKind<'choice'>>(env: NodeJS.ProcessEnv, name: N): ChoiceOf<N> {
  const { choices, default: fallback, defaultFrom } = setting(name) as Extract<Setting, { kind: 'choice' }>;
  if (envString(env, name) === undefined && defaultFrom !== undefined) {
    // A computed default comes from another setting, which reports its own bad value.
    return defaultFrom(env) as ChoiceOf<N>;
  }
  return envOneOf(env, name, choices, fallback) as ChoiceOf<N>;
}

/** The value as set (trimmed, unless the setting says otherwise), else its default. */
export function readText<N extends NameOfKind<'text'>>(env: NodeJS.ProcessEnv, name: N): TextOf<N> {
  const text = setting(name) as Extract<Setting, { kind: 'text' | 'url' }>;
  const raw = env[name];
  if (raw !== undefined && text.emptyIsValue && raw.trim() === '') return '' as TextOf<N>;
  const value = text.untrimmed ? (raw === '' ? undefined : raw) : envString(env, name);
  return (value ?? text.defaultFrom?.(env) ?? text.default) as TextOf<N>;
}

/** An http(s) URL as set, else its default; a malformed one is refused without echoing it. */
export function readUrl<N extends NameOfKind<'url'>>(env: NodeJS.ProcessEnv, name: N): TextOf<N> {
  const url = setting(name) as Extract<Setting, { kind: 'text' | 'url' }>;
  return (envUrl(env, name) ?? url.defaultFrom?.(env) ?? url.default) as TextOf<N>;
}

/** Whether the environment gives the setting a value, or it takes its default. */
export function isSet(env: NodeJS.ProcessEnv, name: SettingName): boolean {
  const raw = env[name];
  if (raw === undefined) return false;
  const entry = setting(name);
  if (entry.kind === 'text' && entry.emptyIsValue) return true;
  if (entry.kind === 'text' && entry.untrimmed) return raw !== '';
  return raw.trim() !== '';
}
