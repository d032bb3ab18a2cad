import { ThreadlineError } from '../../errors.js';

/** The longest text a reminder or job delivers: one chat message on every platform. */
export const MAX_JOB_TEXT_CHARS = 4000;

/** The text a job delivers, or TL_TOOL_INPUT when it is blank or too long. */
export function checkJobText(text: string): string {
  if (text.trim() === '') throw new ThreadlineError('TL_TOOL_INPUT', 'The text to deliver is empty; say what the reminder should say');
  if (text.length > MAX_JOB_TEXT_CHARS) {
    throw new ThreadlineError('TL_TOOL_INPUT', `The text to deliver has ${text.length} characters; at most ${MAX_JOB_TEXT_CHARS} are allowed`);
  }
  return text;
}
