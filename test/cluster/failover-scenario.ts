/**
 * The master-failover scenario, shared by test/cluster/failover.test.ts and
 * bench/cluster-failover.ts: workers run delayed jobs on a Redis Cluster, the master that owns the
 * queue's slot is killed mid-run, its replica takes over, and every run is recorded (start, end,
 * worker, lease token) to count what was lost, what ran twice, and what ran in two places at once.
 */
import { performance } from 'node:perf_hooks';
import { Queue, Worker, type Counts } from '../../src/index.js';
import { queueKeys } from '../../src/redis/keys.js';
import { startRedisCluster, type Failover, type RedisCluster } from '../support/redis-cluster.js';
import { internals } from '../support/internals.js';

/** Settings of one run. */
export interface FailoverScenarioOptions {
  queue: string;
  jobs?: number;
  workers?: number;
  concurrency?: number;
  /** Jobs are due evenly from 500 ms after the add to this much later. */
  spreadMs?: number;
  /** Kill the master once this share of the jobs has completed. */
  killAt?: number;
  /** Bound on the whole run after the kill. */
  timeoutMs?: number;
}

/** One run of a handler. */
export interface Run {
  id: string;
  worker: number;
  attempt: number;
  /**
   * The worker id holding the job's lease, read from Redis inside the handler (queue.get: the
   * record's holder number, named in the holders hash); 'none' when no lease is held, '?' when the
   * read failed.
   */
  lease: string;
  start: number;
  end: number;
}

/** What happened. */
export interface FailoverFigures {
  jobs: number;
  failover: Failover;
  /** From the kill until the first job claimed after the kill completed. */
  resumedAfterMs: number;
  /** From the kill until the last job completed. */
  drainedAfterMs: number;
  /** Jobs never completed. */
  lost: string[];
  /** Jobs whose handler ran more than once (one after the other). */
  ranTwice: string[];
  /**
   * Jobs that ran once but as attempt 2 or later: a claim that reached Redis (and its replica)
   * but whose reply was lost with the old master; the job waited for that lease to expire.
   */
  strandedByLostReply: string[];
  /** Pairs of runs of one job that overlapped in time. */
  overlaps: Array<[Run, Run]>;
  /** Runs that found the lease in Redis held by someone else. */
  foreignLeases: Run[];
  /** Worker 'error' events by message prefix (Redis errors during the failover, lost leases). */
  errors: Record<string, number>;
  /** What the queue holds at the end (nothing waiting, active or dead when every job finished). */
  counts: Counts;
  /** Lateness (claim minus due, Redis clock) of jobs due during the outage: max, ms. */
  maxLatenessMs: number;
}

/** Run the scenario on `cluster` (which loses the master of the queue's slot). */
export async function runFailoverScenario(
  cluster: RedisCluster,
  options: FailoverScenarioOptions,
): Promise<FailoverFigures> {
  const {
    queue: name,
    jobs = 2_000,
    workers: workerCount = 4,
    concurrency = 20,
    spreadMs = 6_000,
    killAt = 0.3,
    timeoutMs = 30_000,
  } = options;
  const keys = queueKeys(name);
  const connection = { cluster: cluster.seeds() };
  const queue = new Queue<number>(name, { connection });
  internals(queue).client.on('error', () => {}); // a Queue reports nothing itself; ioredis would print each reconnect
  const runs: Run[] = [];
  const completed = new Map<string, number>();
  const errors: Record<string, number> = {};
  const completions: Array<{ claimedAt: number; at: number }> = [];
  let maxLatenessMs = 0;
  const workers: Array<Worker<number>> = [];
  try {
    for (let w = 0; w < workerCount; w++) {
      const worker: Worker<number> = new Worker<number>(
        name,
        async (job) => {
          const start = performance.now();
          const lease = await queue.get(job.id).then(
            (info) => info?.lease?.workerId ?? 'none',
            () => '?',
          );
          await new Promise((r) => setTimeout(r, 2 + Math.random() * 8));
          runs.push({
            id: job.id,
            worker: w,
            attempt: job.attempt,
            lease,
            start,
            end: performance.now(),
          });
          maxLatenessMs = Math.max(maxLatenessMs, job.claimedAt.getTime() - job.runAt.getTime());
        },
        // A short lease bounds how long a job whose claim reply died with the master waits.
        { connection, concurrency, leaseMs: 5_000 },
      );
      worker.on('completed', (job) => {
        completed.set(job.id, (completed.get(job.id) ?? 0) + 1);
        completions.push({ claimedAt: job.claimedAt.getTime(), at: Date.now() });
      });
      worker.on('error', (err) => {
        const kind = err.message.slice(0, 60);
        errors[kind] = (errors[kind] ?? 0) + 1;
      });
      workers.push(worker);
    }
    await Promise.all(workers.map((w) => w.waitUntilReady()));

    // Every add is on a replica before it is acknowledged, so a job lost later is the failover's.
    const ids: string[] = [];
    for (let i = 0; i < jobs; i += 500) {
      const batch = Array.from({ length: Math.min(500, jobs - i) }, (_, j) => {
        const n = i + j;
        return {
          payload: n,
          opts: {
            id: `job-${n}`,
            delay: 500 + Math.floor((n / jobs) * spreadMs),
            attempts: 10,
            durability: { replicas: 1, timeoutMs: 5_000 },
          },
        };
      });
      const results = await queue.addBulk(batch);
      ids.push(...results.map((r) => r.id));
    }

    const master = (await cluster.shardOf(keys.waiting)).master;
    await until(() => completed.size >= jobs * killAt, timeoutMs, 'jobs to complete before the kill');
    const t0 = performance.now();
    const failover = await cluster.killMaster(master, { timeoutMs });
    await until(() => completed.size >= jobs, timeoutMs, `all ${jobs} jobs to complete`);
    const drainedAfterMs = performance.now() - t0;
    const counts = await until(
      async () => {
        const c = await queue.counts();
        return c.scheduled + c.active + c.dead === 0 ? c : null;
      },
      timeoutMs,
      'the queue to be empty',
    );

    const byId = new Map<string, Run[]>();
    for (const run of runs) byId.set(run.id, [...(byId.get(run.id) ?? []), run]);
    const overlaps: Array<[Run, Run]> = [];
    for (const list of byId.values()) {
      list.sort((a, b) => a.start - b.start);
      for (let i = 1; i < list.length; i++) {
        if (list[i]!.start < list[i - 1]!.end) overlaps.push([list[i - 1]!, list[i]!]);
      }
    }
    return {
      jobs,
      failover,
      // Claim times are by the Redis clock, on this machine: comparable with the kill time.
      resumedAfterMs:
        Math.min(...completions.filter((c) => c.claimedAt > failover.killedAt).map((c) => c.at)) -
        failover.killedAt,
      drainedAfterMs,
      lost: ids.filter((id) => !completed.has(id)),
      ranTwice: [...byId.entries()].filter(([, list]) => list.length > 1).map(([id]) => id),
      strandedByLostReply: [...byId.entries()]
        .filter(([, list]) => list.length === 1 && list[0]!.attempt > 1)
        .map(([id]) => id),
      overlaps,
      foreignLeases: runs.filter((run) => {
        return run.lease !== '?' && run.lease !== workers[run.worker]?.id;
      }),
      errors,
      counts,
      maxLatenessMs,
    };
  } finally {
    await Promise.all(workers.map((w) => w.close({ timeoutMs: 5_000 })));
    await queue.close();
  }
}

/** What `rounds` of the scenario found, each on a fresh cluster. */
export interface FailoverRounds {
  rounds: FailoverFigures[];
  /** Broken promises: jobs lost, runs in two places at once, leases held by another worker. */
  violations: string[];
}

/**
 * Run the scenario `rounds` times, each on a fresh 3+3 cluster (cluster-node-timeout 1 s) that
 * loses the master of the queue's slot; `log` gets one line per round.
 */
export async function runFailoverRounds(
  rounds: number,
  log: (line: string) => void,
  options: Omit<FailoverScenarioOptions, 'queue'> = {},
): Promise<FailoverRounds> {
  const out: FailoverRounds = { rounds: [], violations: [] };
  for (let round = 1; round <= rounds; round++) {
    const cluster = await startRedisCluster({ nodeTimeoutMs: 1_000 });
    try {
      const f = await runFailoverScenario(cluster, { ...options, queue: `failover-${round}` });
      out.rounds.push(f);
      log(
        `round ${round}: promoted ${Math.round(f.failover.promotedAfterMs)} ms, work resumed ${f.resumedAfterMs} ms, ` +
          `all done ${Math.round(f.drainedAfterMs)} ms after the kill; lost ${f.lost.length}, ran twice ${f.ranTwice.length}, ` +
          `stranded by a lost claim reply ${f.strandedByLostReply.length}, overlapping ${f.overlaps.length}, foreign leases ${f.foreignLeases.length}, max lateness ${f.maxLatenessMs} ms, ` +
          `worker errors ${Object.values(f.errors).reduce((a, b) => a + b, 0)}`,
      );
      if (Object.keys(f.errors).length > 0) log(`  worker errors: ${JSON.stringify(f.errors)}`);
      for (const id of f.ranTwice.slice(0, 5)) log(`  ran twice: ${id}`);
      if (f.lost.length > 0)
        out.violations.push(`round ${round}: ${f.lost.length} jobs lost (${f.lost[0]}, ...)`);
      if (f.overlaps.length > 0)
        out.violations.push(`round ${round}: ${f.overlaps.length} jobs ran in two places at once`);
      if (f.foreignLeases.length > 0)
        out.violations.push(`round ${round}: ${f.foreignLeases.length} runs under another worker's lease`);
    } finally {
      await cluster.stop();
    }
  }
  return out;
}

/** Poll `check` every 20 ms until truthy; throws after `timeoutMs`. */
async function until<T>(
  check: () => T | Promise<T>,
  timeoutMs: number,
  what: string,
): Promise<NonNullable<T>> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (performance.now() >= deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
