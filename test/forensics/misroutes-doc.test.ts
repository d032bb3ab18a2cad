/**
 * docs/debugging-misroutes.md pastes what `threadline misroutes` and `threadline trace`
 * printed for the gateway-traces fixture: each `$ threadline …` block is run again on a fresh
 * fixture and must print the same, ids, times and ports aside.
 */
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runThreadline } from '../../src/cli/threadline.js';
import { buildGatewayTraces, type GatewayTraces } from './gateway-traces.js';

const DOC = readFileSync(new URL('../../docs/debugging-misroutes.md', import.meta.url), 'utf8');
/** The paths the page shows for the trace file and the data dir. */
const DOC_FILE = 'data/traces.jsonl';
const DOC_DATA_DIR = '/srv/threadline/data';

/** The console blocks of the page: the command after `$ threadline`, and what it printed. */
const examples = [...DOC.matchAll(/^```console\n\$ threadline (.+)\n([\s\S]*?)^```$/gm)].map((match) => ({ command: match[1]!, output: match[2]! }));

/** What differs from run to run: ids, times, ports, durations and counts. */
function normalized(text: string): string {
  return text
    .replace(/\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/g, '<uuid>')
    .replace(/\bcron:c[0-9a-z]{5}:\d+\b/g, '<cron run>')
    .replace(/\b[0-9a-f]{32}\b/g, '<trace id>')
    .replace(/\b[0-9a-f]{16}\b/g, '<span id>')
    .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/g, '<time>')
    .replace(/127\.0\.0\.1:\d+/g, '127.0.0.1:<port>')
    .replace(/\b\d+ ms\b/g, '<n> ms')
    .replace(/\b\d+ (traces?|spans?) from\b/g, '<n> $1 from');
}

const root = mkdtempSync(join(tmpdir(), 'threadline-misroutes-doc-'));
let fixture: GatewayTraces;
beforeAll(async () => {
  // A smaller gateway run than misroutes-cli's thousand: the examples need its shapes, not its volume.
  fixture = await buildGatewayTraces(root, { messages: 250 });
}, 60_000);
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('docs/debugging-misroutes.md', () => {
  it('has the three examples it walks through', () => {
    expect(examples.map((example) => example.command.split(' ')[0])).toEqual(['misroutes', 'trace', 'misroutes']);
  });

  it('stays under 9 KB', () => {
    expect(statSync(new URL('../../docs/debugging-misroutes.md', import.meta.url)).size).toBeLessThanOrEqual(9 * 1024);
  });

  it.each(examples.map((example, index) => [index + 1, example] as const))('example %i prints what the CLI prints', async (_index, example) => {
    let out = '';
    // The page's commands as typed: the trace file and data dir come from the environment, as on a host.
    await runThreadline(example.command.split(' '), {
      out: (text) => void (out += text),
      err: (text) => void (out += text),
      env: { THREADLINE_TRACE_FILE: fixture.file, THREADLINE_DATA_DIR: fixture.dataDir },
    });
    const printed = out.replaceAll(fixture.file, DOC_FILE).replaceAll(fixture.dataDir, DOC_DATA_DIR);
    expect(normalized(printed)).toBe(normalized(example.output));
  });
});
