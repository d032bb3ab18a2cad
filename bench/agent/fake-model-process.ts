/**
 * The model of bench:agent, a process of its own so its CPU is not the gateway's: threadline's
 * FakeOpenAI on 127.0.0.1, answering each request after BENCH_MODEL_MS with the user's text
 * (so the sink can count the replies); a text that starts with `slow` after BENCH_MODEL_SLOW_MS
 * instead (bench:distributed's slow turn). Prints its base URL on stdout.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { FakeOpenAI } from '../../src/testing/fake-openai.js';

const delayMs = Number(process.env['BENCH_MODEL_MS'] ?? 1_000);
const slowMs = Number(process.env['BENCH_MODEL_SLOW_MS'] ?? delayMs);
const model = await FakeOpenAI.start(async (request) => {
  const text = FakeOpenAI.lastUserText(request);
  await sleep(text?.startsWith('slow') === true ? slowMs : delayMs);
  return FakeOpenAI.text(`you said: ${text}`);
});
console.log(model.baseUrl);
process.once('SIGTERM', () => void model.close().then(() => process.exit(0)));
