/**
 * Never early, checked where it is decided (docs/DESIGN.md invariant 3, docs/ARCHITECTURE.md §5.3):
 * what the claim script wrote, not what the worker reports. The script writes the lease's start
 * from Redis TIME twice, into the lease member ("<claims>.<claimed at>|<id>") and into the
 * record's claim block (what `queue.get(id).lease.startedAt` shows). `job.claimedAt` is the
 * worker's word for when the handler started, so a claim that leased a job early could hide
 * behind a worker that holds it until due: these tests read the script's own times.
 *
 * Registered by conformanceSuite (suite.ts) for every strategy and target; with a zset strategy
 * also on a partitioned queue.
 */
import type { Cluster, Redis } from 'ioredis';
import { expect, it } from 'vitest';
import { Queue, Worker, type Job } from '../../src/index.js';
import { jsonCodec } from '../../src/codec/json.js';
import { tokenOfLease } from '../../src/members/lease.js';
import { claim, type ClaimInput } from '../../src/operations/claim.js';
import { ZSET_LAYOUT } from '../../src/operations/wheel.js';
import { encodeRecord, NEW_JOB_HEADER } from '../../src/record/index.js';
import type { Strategy } from '../../src/redis/capabilities.js';
import type { ConnectionOption } from '../../src/redis/connection.js';
import { queueKeys } from '../../src/redis/keys.js';
import { CLAIM_AHEAD_MS } from '../../src/worker/start-gate.js';
import { serverNow, uniqueQueue, waitFor } from '../support/fixtures.js';

/** Where the tests run (suite.ts ConformanceTarget). */
export interface NeverEarlyTarget {
  connection(): ConnectionOption;
  inspector(): Redis | Cluster;
}

export interface NeverEarlyOptions {
  /** As SuiteOptions.precisionMs: the wheel's granularity, else 0. */
  precisionMs: number;
  /** Strategy 'wheel': the bucket width. */
  granularityMs: number;
  /** Clean-up after the test (suite.ts's closers). */
  closeAfter(close: () => Promise<unknown>): void;
}

/** The claim time a lease member carries: "<claims>.<claimed at>|<id>". */
function leaseStartOf(member: string): number {
  return Number(tokenOfLease(member).split('.')[1]);
}

/** Register the tests for `strategy` on `at`. */
export function neverEarlyTests(strategy: Strategy, at: NeverEarlyTarget, options: NeverEarlyOptions): void {
  const wheelOptions = strategy === 'wheel' ? { wheel: { granularityMs: options.granularityMs } } : {};
  // How early a lease may begin: a claim may reach CLAIM_AHEAD_MS ahead; the wheel never does.
  const reach = strategy === 'wheel' ? 0 : CLAIM_AHEAD_MS;

  /**
   * Claim `dueOf`'s jobs (already waiting) by direct calls, a ms apart, cycling through `kinds`
   * of claim, until every one is leased; then check each lease's start, as the script wrote it
   * in the member and the claim block, against its due time less the reach the claim was allowed
   * for it (`reachOf`: the claim's, or 0 for a class never claimed ahead).
   */
  async function leaseAllAndCheck(
    r: Redis | Cluster,
    name: string,
    dueOf: ReadonlyMap<string, number>,
    kinds: ReadonlyArray<{ limit: number; aheadMs: number }>,
    reachOf: (id: string, aheadMs: number) => number,
  ): Promise<void> {
    const keys = queueKeys(name);
    const base: ClaimInput = {
      strategy,
      limit: 1,
      leaseMs: 60_000,
      holder: 1,
      deadMaxCount: 1_000,
      deadMaxAgeMs: 0,
      rate: { max: 0, perMs: 0 },
      eventsCap: 0,
      zmscore: true,
      layout: ZSET_LAYOUT,
      // One job per group here: the bound never holds a due job back.
      groups: { concurrency: 1 },
    };
    const leased: Array<{
      id: string;
      due: number;
      aheadMs: number;
      limit: number;
      memberAt: number;
      recordAt: number;
      replyNow: number;
      replyDue: number;
    }> = [];
    const start = await serverNow(r);
    let claims = 0;
    while (leased.length < dueOf.size) {
      const kind = kinds[claims++ % kinds.length]!;
      const out = await claim(r, keys, { ...base, limit: kind.limit, aheadMs: kind.aheadMs });
      for (const job of out.jobs) {
        leased.push({
          id: job.id,
          due: dueOf.get(job.id)!,
          ...kind,
          memberAt: leaseStartOf(job.member),
          recordAt: job.header.claimedAt,
          replyNow: out.now,
          replyDue: job.runAt,
        });
      }
      if (out.now > start + 30_000)
        throw new Error(`only ${leased.length} of ${dueOf.size} jobs leased in 30 s`);
      await new Promise((res) => setTimeout(res, 1));
    }
    expect(new Set(leased.map((l) => l.id)).size).toBe(dueOf.size);
    for (const l of leased) {
      const what = JSON.stringify(l);
      expect(l.memberAt, `leased before due minus the reach allowed: ${what}`).toBeGreaterThanOrEqual(
        l.due - reachOf(l.id, l.aheadMs),
      );
      expect(l.recordAt, `the claim block's start is not the member's: ${what}`).toBe(l.memberAt);
      expect(l.replyNow, what).toBe(l.memberAt);
      expect(l.replyDue, what).toBe(l.due);
    }
  }

  // A few ms ahead, and some further: a due check that lets a job through early by any margin up
  // to a second is met by one of them while the claims run.
  const OFFSETS = [2, 4, 7, 11, 16, 25, 40, 80, 250, 1_000];

  if (strategy !== 'wheel') {
    it('a claim leases no job before its due time by the Redis clock: the lease start the script writes, at limit 1 (ZPOPMIN where allowed) and 10, plain and reaching ahead', async () => {
      const name = uniqueQueue(`${strategy}-early`);
      const keys = queueKeys(name);
      const r = at.inspector();
      options.closeAfter(() => r.quit());
      const now = await serverNow(r);
      const dueOf = new Map<string, number>();
      for (const [i, offset] of OFFSETS.entries()) {
        const id = `e${i}`;
        dueOf.set(id, now + offset);
        await r.hset(keys.records, id, encodeRecord(NEW_JOB_HEADER, jsonCodec.encodePayload(i)));
      }
      // One ZADD, and nothing but default-class jobs: a claim of 1 is the ZPOPMIN path (strategy
      // zpopmin); a claim of 10 reads the due heads by score. Each also reaching ahead.
      await r.zadd(keys.waiting, ...[...dueOf].flatMap(([id, due]) => [due, id]));
      const kinds = [
        { limit: 1, aheadMs: 0 },
        { limit: 10, aheadMs: 0 },
        { limit: 1, aheadMs: CLAIM_AHEAD_MS },
        { limit: 10, aheadMs: CLAIM_AHEAD_MS },
      ];
      await leaseAllAndCheck(r, name, dueOf, kinds, (_id, aheadMs) => aheadMs);
    });

    it('a claim leases no prioritized or grouped job before its due time by the Redis clock (a prioritized one not even when reaching ahead)', async () => {
      const name = uniqueQueue(`${strategy}-early`);
      const r = at.inspector();
      options.closeAfter(() => r.quit());
      const queue = new Queue<number>(name, { connection: at.connection(), strategy });
      options.closeAfter(() => queue.close());
      // Ready first, so the adds below are quick and the clock read just before them holds.
      await queue.counts();
      const now = await serverNow(r);
      const jobs = OFFSETS.flatMap((offset, i) => [
        { payload: i, opts: { id: `p${i}`, runAt: now + offset, priority: i % 2 === 0 ? -5 : 3 } },
        { payload: i, opts: { id: `g${i}`, runAt: now + offset, group: `g${i}` } },
        { payload: i, opts: { id: `d${i}`, runAt: now + offset } },
      ]);
      await queue.addBulk(jobs);
      const dueOf = new Map(jobs.map((j) => [j.opts.id, j.opts.runAt]));
      const kinds = [
        { limit: 1, aheadMs: 0 },
        { limit: 10, aheadMs: CLAIM_AHEAD_MS },
        { limit: 1, aheadMs: CLAIM_AHEAD_MS },
        { limit: 10, aheadMs: 0 },
      ];
      // Prioritized jobs are promoted only when due by now: no claim leases one ahead.
      await leaseAllAndCheck(r, name, dueOf, kinds, (id, aheadMs) => (id.startsWith('p') ? 0 : aheadMs));
    });
  }

  for (const partitions of strategy === 'wheel' ? [1] : [1, 3]) {
    const where = partitions > 1 ? ` (${partitions} partitions)` : '';
    it(`a worker's jobs due a few ms apart: leased at most the claim-ahead reach early and started not before due, by the Redis clock${where}`, async () => {
      const name = uniqueQueue(`${strategy}-early`);
      const r = at.inspector();
      options.closeAfter(() => r.quit());
      const queue = new Queue<number>(name, {
        connection: at.connection(),
        strategy,
        partitions,
        ...wheelOptions,
      });
      options.closeAfter(() => queue.close());
      const runs: Array<{
        id: string;
        runAt: number;
        claimedAt: number;
        leasedAt: number;
        timeAfterStart: number;
      }> = [];
      const errors: Error[] = [];
      // Concurrency 1: each claim takes one job (ZPOPMIN with strategy zpopmin), and the claim
      // sent with the last job's ack comes while the next job is still a gap away.
      const w = new Worker<number>(
        name,
        async (job: Job<number>) => {
          // TIME read after the start: at least the server's clock when the handler started.
          const timeAfterStart = await serverNow(r);
          // The record's claim block: the lease start claim.lua wrote from TIME.
          const info = await queue.get(job.id);
          runs.push({
            id: job.id,
            runAt: job.runAt.getTime(),
            claimedAt: job.claimedAt.getTime(),
            leasedAt: info?.lease?.startedAt.getTime() ?? Number.NaN,
            timeAfterStart,
          });
        },
        { connection: at.connection(), strategy, partitions, concurrency: 1, ...wheelOptions },
      );
      w.on('error', (err) => errors.push(err));
      options.closeAfter(() => w.close({ timeoutMs: 2_000 }));
      await w.waitUntilReady();
      const base = (await serverNow(r)) + 100;
      // Gaps from 1 ms to 400 ms between due times.
      const offsets = [0, 1, 3, 6, 10, 20, 40, 80, 160, 560];
      await queue.addBulk(
        offsets.map((offset, i) => ({ payload: i, opts: { id: `w${i}`, runAt: base + offset } })),
      );
      await waitFor(() => runs.length === offsets.length, {
        what: `${offsets.length} runs`,
        timeoutMs: 10_000 + 2 * options.precisionMs,
      });
      expect(errors).toEqual([]);
      for (const run of runs) {
        const what = JSON.stringify(run);
        expect(run.leasedAt, `leased too early: ${what}`).toBeGreaterThanOrEqual(run.runAt - reach);
        expect(run.timeAfterStart, `started before due by Redis TIME: ${what}`).toBeGreaterThanOrEqual(
          run.runAt,
        );
        // The worker's claimedAt is its lower bound of the server clock at the start (the lease
        // start for a job leased when due): between the lease and the TIME read after it.
        expect(run.claimedAt, `claimedAt before runAt: ${what}`).toBeGreaterThanOrEqual(run.runAt);
        expect(run.claimedAt, `claimedAt before the lease: ${what}`).toBeGreaterThanOrEqual(run.leasedAt);
        expect(run.claimedAt, `claimedAt after the start: ${what}`).toBeLessThanOrEqual(run.timeAfterStart);
      }
    });
  }
}
