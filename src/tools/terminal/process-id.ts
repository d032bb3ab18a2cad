import { randomInt } from 'node:crypto';

const ID_CHARS = 5;

/** A short id users type (`/kill p3k9zq`): `p` and 5 base36 characters, about 60 million of them. */
export function newProcessId(): string {
  let id = 'p';
  for (let index = 0; index < ID_CHARS; index++) id += randomInt(36).toString(36);
  return id;
}

/** True for text newProcessId could have made: an id is also a directory name, so nothing else is accepted. */
export function isProcessId(text: string): boolean {
  return /^p[0-9a-z]{5}$/.test(text);
}
