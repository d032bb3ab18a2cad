import { defineTool, getSession } from 'threadline';
import * as z from 'zod';

/**
 * A tool of your own. Its input is a zod schema (the model is shown its JSON Schema); chat and
 * thread come from the active context, never from an argument, and later() sends a message to
 * them at its time, even after a restart.
 */
export const trackParcel = defineTool({
  name: 'track_parcel',
  description: 'Tracks a parcel by its number and says in this chat when it arrives.',
  input: z.object({
    parcel: z.string().regex(/^P\d{1,12}$/).describe('The parcel number, like P42'),
    minutes: z.number().int().min(1).max(7 * 24 * 60).describe('Minutes until it is due'),
  }),
  async run({ parcel, minutes }, call) {
    const { chatId, threadId } = getSession();
    const job = await call.later(`${parcel} has arrived.`, minutes * 60_000);
    return `Tracking ${parcel} for chat ${chatId}${threadId ? `, thread ${threadId}` : ''}: due ${new Date(job.at).toISOString()} (${job.id}).`;
  },
});
