// A hostile Tempo (loopback) cannot make the command hold what it sends: each answer is abandoned past its cap, and all traces share a budget.
import { afterEach, describe, expect, it } from 'vitest';
import { TempoSource } from '../../src/forensics/tempo-source.js';
import type { TraceQuery } from '../../src/forensics/trace-source.js';
import { startHostileTempo, type HostileTempo } from '../helpers/hostile-tempo.js';

const T0 = 1_700_000_000_000;
const MIB = 1024 * 1024;
const query: TraceQuery = { service: 'threadline', since: T0 - 1_000, until: T0 + 60_000, purpose: 'deliveries', limit: 100 };

const servers: HostileTempo[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function hostile(...args: Parameters<typeof startHostileTempo>): Promise<HostileTempo> {
  const server = await startHostileTempo(...args);
  servers.push(server);
  return server;
}

describe('TempoSource against a hostile Tempo', () => {
  it('abandons a trace that never ends as soon as it passes the answer cap, leaves it out, says so, and reads the rest', async () => {
    let endless: string | undefined;
    const tempo = await hostile({
      traces: 3,
      startMs: T0,
      // The second trace listed never ends; the others are small and valid.
      answerFor: (id) => ((endless ??= id === (2).toString(16).padStart(32, 'c') ? id : undefined) === id ? { kind: 'endless' } : { kind: 'padded', bytes: 2_000 }),
    });
    const source = new TempoSource(tempo.url, { maxBytes: MIB });
    const found = await source.search(query);
    expect(found.map((trace) => trace.traceId).sort()).toEqual([tempo.traceIds[0], tempo.traceIds[2]].sort());
    // The server saw the client hang up; it got no further than the cap and what the sockets buffer.
    expect(await tempo.endlessClosed).toBeLessThan(MIB + 16 * MIB);
    expect(source.warnings()).toEqual([`tempo ${tempo.url} answered 1 trace with more than 1 MiB each; read no further and left out.`]);
  });

  it('stops reading traces past the budget shared by all of them, asks for no more, and names what it did not examine', async () => {
    const tempo = await hostile({ traces: 40, startMs: T0, answerFor: () => ({ kind: 'padded', bytes: 256 * 1024 }) });
    const source = new TempoSource(tempo.url, { maxTotalBytes: MIB, concurrency: 2 });
    const found = await source.search(query);
    // A MiB holds three traces of 256 KiB whole; the fourth is where the budget ran out.
    expect(found.length).toBeGreaterThanOrEqual(1);
    expect(found.length).toBeLessThanOrEqual(4);
    // What is left is not asked for: at most the reads in flight when the budget ran out.
    expect(tempo.traceRequests.length).toBeLessThanOrEqual(found.length + 2);
    expect(tempo.bytesWritten()).toBeLessThan(40 * 256 * 1024);
    const unread = tempo.traceIds.filter((id) => !found.some((trace) => trace.traceId === id));
    const [warning, ...others] = source.warnings();
    expect(others).toEqual([]);
    const said = new RegExp(
      `^tempo ${tempo.url}: stopped reading traces after 1 MiB, the most one command reads from a trace store; ` +
        `${unread.length} traces were not examined \\(((?:[0-9a-f]{32}, ){4}[0-9a-f]{32}) and ${unread.length - 5} more\\); narrow --since or --chat, or lower --limit\\.$`,
    ).exec(warning!);
    expect(said, warning).not.toBeNull();
    for (const id of said![1]!.split(', ')) expect(unread).toContain(id);
    // A later get is refused the same way, without a request.
    const asked = tempo.traceRequests.length;
    expect(await source.get(unread[0]!)).toBeUndefined();
    expect(tempo.traceRequests).toHaveLength(asked);
  });

  it('reads every trace within the budget as before', async () => {
    const tempo = await hostile({ traces: 10, startMs: T0, answerFor: () => ({ kind: 'padded', bytes: 10_000 }) });
    const source = new TempoSource(tempo.url, { maxTotalBytes: MIB });
    expect(await source.search(query)).toHaveLength(10);
    expect(source.warnings()).toEqual([]);
  });
});
