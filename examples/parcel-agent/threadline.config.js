import { defineGatewayConfig } from 'threadline';
import { parcelAgent } from './agent.js';
import { trackParcel } from './tools/track-parcel.js';

// `threadline start` (and `npm start`) load this module from the working directory.
export default defineGatewayConfig({
  tools: [trackParcel],
  // With a model (THREADLINE_LLM_BASE_URL), the gateway's LLM agent calls the tool itself.
  ...(process.env.THREADLINE_LLM_BASE_URL ? {} : { agent: parcelAgent }),
});
