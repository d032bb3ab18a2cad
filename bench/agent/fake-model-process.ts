/**
 * The model of bench:agent, a process of its own so its CPU is not the gateway's: threadline's
 * FakeOpenAI on 127.0.0.1, answering each request after BENCH_MODEL_MS with the user's text
 * (so the sink can count the replies). Prints its base URL on stdout.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { FakeOpenAI } from '../../src/testing/fake-openai.js';

const delayMs = Number(process.env['BENCH_MODEL_MS'] ?? 1_000);
const model = await FakeOpenAI.start(async (request) => {
  await sleep(delayMs);
  return FakeOpenAI.text(`you said: ${FakeOpenAI.lastUserText(request)}`);
});
console.log(model.baseUrl);
process.once('SIGTERM', () => void model.close().then(() => process.exit(0)));
