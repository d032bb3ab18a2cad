import { executeTool, offeredTools } from 'threadline';

/**
 * An agent of your own, for a gateway without a model: "track P42 in 30" calls the tool,
 * anything else gets a hint. Tools run through executeTool (checked input, an execute_tool
 * span, admin checks) and only if this turn may offer them.
 */
export function parcelAgent(toolbox) {
  return {
    async handle(turn) {
      const match = /^track (P\d+) in (\d+)$/i.exec(turn.text.trim());
      if (match === null) return turn.reply('Say "track P42 in 30" and I will tell you when it arrives.');
      const tools = offeredTools(toolbox.tools.values(), { platform: turn.session.platform, admin: turn.senderIsAdmin });
      const tool = tools.find(({ name }) => name === 'track_parcel');
      if (tool === undefined) return turn.reply('Parcel tracking is not available in this chat.');
      const result = await executeTool(tool, { parcel: match[1].toUpperCase(), minutes: Number(match[2]) }, {
        signal: turn.signal,
        authorize: (name) => turn.authorize(name),
      });
      await turn.reply(result.text);
    },
  };
}
