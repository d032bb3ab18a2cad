/** At most this many `.md` files are read (in name order), so a crowded directory cannot exhaust memory. */
export const MAX_SKILL_FILES = 200;
/** A larger skill file is refused as too large. */
export const MAX_SKILL_FILE_BYTES = 64 * 1024;
/** The skills part of the system prompt stays under this many UTF-8 bytes, the note of what was left out included. */
export const MAX_SKILLS_PROMPT_BYTES = 32 * 1024;
/** A description longer than this is refused: it is listed to every user and model. */
export const MAX_DESCRIPTION_CHARS = 1024;
/** The directory is checked for changes at most this often. */
export const CHANGE_CHECK_INTERVAL_MS = 1000;
/** The name rule THREADLINE_SKILLS_DISABLED uses, so every skill can be disabled by name. */
export const SKILL_NAME_PATTERN = /^[A-Za-z0-9_.-]{1,64}$/;
/** A platform name as the gateway spells them (`telegram`, `slack`, `webhook`, `cli`). */
export const PLATFORM_NAME_PATTERN = /^[a-z][a-z0-9_-]{0,31}$/;
