import type { Tool } from '../../tools/tool.js';
import type { ChatCompletionTool } from './model-types.js';

/** The tools as Chat Completions function definitions; the JSON round trip keeps exactly what would go over the wire. */
export function toolDefinitions(tools: readonly Tool[]): ChatCompletionTool[] {
  return tools.map((tool) => ({
    type: 'function',
    function: {
      name: tool.name,
      description: tool.description,
      parameters: JSON.parse(JSON.stringify(tool.input.jsonSchema)) as Record<string, unknown>,
    },
  }));
}
