// The slot of a running partition is moved to another master (SETSLOT IMPORTING / MIGRATING,
// MIGRATE ... KEYS in small batches, SETSLOT NODE), as `redis-cli --cluster reshard` and managed
// services do when a cluster grows, while two workers claim and a producer adds. While the slot's
// keys are split between the two masters every script of that partition is refused (ASK, then
// TRYAGAIN on the importing node, whose multi-key scripts lack some keys): none of those ran, so
// they are sent again (src/redis/scripts.ts). Afterwards every job added ran exactly once and
// never before its due time by the Redis clock; the lateness of the jobs due during the move is
// printed, not asserted (figures are not timed assertions).
import { describe, expect, it } from 'vitest';
import { partitionOf } from '../../src/partition/index.js';
import { partitionKeys } from '../../src/redis/keys.js';
import { uniqueQueue, waitFor } from '../support/fixtures.js';
import { partitionedClients } from '../support/partitioned.js';
import { migrateSlot } from '../support/slot-migration.js';
import { useRedisCluster } from './support.js';
import type { Job } from '../../src/index.js';

const redis = useRedisCluster({ replicasPerMaster: 0 });
const P = 3;
// A few hundred in the suite; `npm run test:slot-migration` runs it with 2,000.
const JOBS = Number(process.env['DELAYQ_SLOT_MIGRATION_JOBS'] ?? 360);

// ioredis's own budget for redirections (maxRedirections 64 x 250 ms, src/redis/connection.ts) is
// made small here, so the move outlasts it as a long one would outlast the default: what keeps
// the calls going is delayq's own resend of a refused script.
const { queue: open, worker: work } = partitionedClients(
  () => ({
    ...redis.connection(),
    clusterOptions: { maxRedirections: 4, retryDelayOnTryAgain: 20, retryDelayOnFailover: 50 },
  }),
  P,
);

function percentile(sorted: readonly number[], p: number): number {
  return sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;
}

describe('cluster: a partition slot moved to another master under load', () => {
  it('loses nothing, runs nothing twice or early, while workers claim and a producer adds', async () => {
    const name = uniqueQueue('move');
    const q = open<number>(name);
    const runs = new Map<string, number>();
    const ran: Array<{ id: string; runAt: number; claimedAt: number }> = [];
    let early = 0;
    const handler = async (job: Job<number>): Promise<void> => {
      runs.set(job.id, (runs.get(job.id) ?? 0) + 1);
      if (job.claimedAt.getTime() < job.runAt.getTime()) early++;
      ran.push({ id: job.id, runAt: job.runAt.getTime(), claimedAt: job.claimedAt.getTime() });
      await new Promise((r) => setTimeout(r, 3)); // some jobs are running while the keys move
    };
    const workers = [work(name, handler, { concurrency: 8 }), work(name, handler, { concurrency: 8 })];
    await Promise.all(workers.map((w) => w.waitUntilReady()));

    // Partition 0's slot goes to another master.
    const keys0 = partitionKeys(name, P)[0]!;
    const slot = await redis.cluster().slotOf(keys0.waiting);
    const from = (await redis.cluster().shardOf(keys0.waiting)).master;
    const to = (await redis.cluster().shards()).find((s) => s.master.id !== from.id)!.master;

    // Waiting jobs due over the next 3 s, so some fall due while the slot moves.
    const added: string[] = [];
    const first = await q.addBulk(
      Array.from({ length: Math.floor(JOBS / 2) }, (_, i) => ({
        payload: i,
        opts: { delay: (i * 17) % 3_000 },
      })),
    );
    added.push(...first.map((a) => a.id));
    // A producer adding one job every 10 ms, due within 500 ms, through and after the move.
    let producing = true;
    const producer = (async () => {
      for (let i = 0; i < JOBS - Math.floor(JOBS / 2); i++) {
        added.push((await q.add(10_000 + i, { delay: (i * 7) % 500 })).id);
        await new Promise((r) => setTimeout(r, 10));
      }
      producing = false;
    })();
    await new Promise((r) => setTimeout(r, 300));
    const move = await migrateSlot(redis.cluster(), slot, to, { keysPerBatch: 2, pauseMs: 150 });
    await producer;
    expect(producing).toBe(false);

    await waitFor(() => runs.size === added.length, { timeoutMs: 60_000, what: 'every job to run' });
    await waitFor(async () => (await q.counts()).active === 0, { what: 'the last acks' });
    const twice = [...runs.values()].filter((n) => n > 1).length;
    const lost = added.filter((id) => !runs.has(id)).length;
    expect(await q.counts()).toEqual({
      scheduled: 0,
      due: 0,
      held: 0,
      active: 0,
      dead: 0,
      completed: added.length,
      cancelled: 0,
      waitingChildren: 0,
    });
    // The partition's keys now live on the new master.
    expect((await redis.cluster().shardOf(keys0.waiting)).master.id).toBe(to.id);
    expect(move.keys).toBeGreaterThan(2);
    expect({ lost, twice, early }).toEqual({ lost: 0, twice: 0, early: 0 });

    // Lateness of the jobs due while the slot moved: of the moved partition, and of the others.
    const lateness = (moved: boolean, from = move.startedAt, to = move.endedAt): number[] =>
      ran
        .filter((r) => r.runAt >= from && r.runAt <= to)
        .filter((r) => (partitionOf(r.id, P) === 0) === moved)
        .map((r) => r.claimedAt - r.runAt)
        .sort((a, b) => a - b);
    const show = (late: number[]): string =>
      `${late.length} jobs, p50 ${percentile(late, 0.5)} ms, p99 ${percentile(late, 0.99)} ms, max ${late.at(-1) ?? 0} ms`;
    console.log(
      `slot ${slot} moved ${from.port} -> ${to.port}: ${move.keys} keys in ${move.batches} MIGRATEs, ` +
        `${move.endedAt - move.startedAt} ms; jobs ${added.length}, lost ${lost}, run twice ${twice}, ` +
        `early ${early}; lateness of jobs due during the move: moved partition ${show(lateness(true))}; ` +
        `other partitions ${show(lateness(false))}; all jobs due from 1 s after it: ` +
        `${show([...lateness(true, move.endedAt + 1_000, Infinity), ...lateness(false, move.endedAt + 1_000, Infinity)].sort((a, b) => a - b))}`,
    );
  }, 120_000);
});
