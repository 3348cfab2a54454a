/**
 * Issue 15's priority figure: what a claim costs with 100,000 due jobs spread over 100 priorities,
 * against the same 100,000 due jobs in the default class (flat). Claim cost must stay O(log N) per
 * job: no scan over priority levels (docs/ARCHITECTURE.md §4.2 step 3).
 *
 * Per case, a fresh queue on its own redis-server: 100,000 jobs (priorities -50..49 round-robin,
 * or none) added already due, so prioritized ones go straight to the due set r; or, in the
 * "promoted" case, added 20 s ahead, so they wait in p and each claim first promotes the due ones
 * to r (up to 1,000 per call), as jobs that fall due do. Then the worker's exchange is run
 * directly, one call at a time: each
 * call acks the jobs the previous call took and claims `limit` more (claim.lua), at limit 1
 * (concurrency 1) and limit 25 (a batch). Reported per job: the server's time inside the script
 * (INFO commandstats, FCALL or EVALSHA usec, so the client and the network are left out), the calls' wall
 * time as this process sees it, and a check that the jobs came out in priority order.
 *
 * Last, the smallest case of the promotion bound (promotionBound below).
 *
 * Run alone: node --import tsx bench/priority-claim.ts [--jobs=100000] [--taken=5000]
 */
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { Queue } from '../src/index.js';
import { claim, type AckItem, type ClaimedJob, type ClaimInput } from '../src/operations/claim.js';
import { ZSET_LAYOUT } from '../src/operations/wheel.js';
import { queueKeys } from '../src/redis/keys.js';
import { startRedis } from '../src/testing/redis-server.js';

function numberFlag(name: string, fallback: number): number {
  const arg = process.argv.slice(2).find((a) => a.startsWith(`--${name}=`));
  const value = arg === undefined ? fallback : Number(arg.slice(name.length + 3));
  if (!Number.isInteger(value) || value <= 0)
    throw new Error(`--${name} must be a whole number > 0, got ${arg}`);
  return value;
}

const JOBS = numberFlag('jobs', 100_000);
/** Jobs each measured run takes out of the queue (so it stays near JOBS deep throughout). */
const TAKEN = numberFlag('taken', 5_000);
const LEVELS = 100;
const ADD_BATCH = 1_000;

/** How the jobs are added: no priority, prioritized and already due, or prioritized and due later. */
type Case = 'flat' | 'priorities' | 'promoted';
/** The promoted case's jobs are due this long after the first add. */
const AHEAD_MS = 20_000;

interface Figures {
  /** The server's time inside the measured calls, ms. */
  serverMs: number;
  /** Jobs waiting in p (not yet due when added) as the measurement starts. */
  inP: number;
  serverUsPerJob: number;
  wallUsPerJob: number;
  callsPerJob: number;
  inOrder: boolean;
}

/** Script calls and their µs so far: FCALL where the server has functions, else EVALSHA. */
async function evalshaStats(client: Redis): Promise<{ calls: number; usec: number }> {
  const info = await client.info('commandstats');
  let calls = 0;
  let usec = 0;
  for (const m of info.matchAll(/^cmdstat_(?:evalsha|fcall):calls=(\d+),usec=(\d+)/gm)) {
    calls += Number(m[1]);
    usec += Number(m[2]);
  }
  return { calls, usec };
}

/** A direct claim of `limit` jobs, leased for 10 min, events off. */
function claimInput(limit: number): ClaimInput {
  return {
    strategy: 'zpopmin' as const,
    limit,
    leaseMs: 600_000,
    holder: 1,
    deadMaxCount: 100_000,
    deadMaxAgeMs: 0,
    rate: { max: 0, perMs: 0 },
    eventsCap: 0,
    zmscore: true,
    layout: ZSET_LAYOUT,
  };
}

async function serverNow(client: Redis): Promise<number> {
  const [sec, micro] = await client.time();
  return Number(sec) * 1_000 + Math.floor(Number(micro) / 1_000);
}

/**
 * The smallest case of the promotion bound (claim.lua promotes at most 1,000 due jobs from p per
 * call): 1,000 jobs of priority 5 and one of priority -5, all due, the -5 one 1 ms after the others.
 * Strict order would take the -5 one first. Returns the priorities of the first two claims' jobs.
 */
async function promotionBound(): Promise<number[]> {
  const server = await startRedis();
  const client = new Redis(server.url);
  try {
    const queue = new Queue<number>('prio-bound', { connection: server.url });
    const due = (await serverNow(client)) + 2_000;
    await queue.addBulk(
      Array.from({ length: 1_000 }, (_, i) => ({ payload: i, opts: { runAt: due, priority: 5 } })),
    );
    await queue.add(-5, { runAt: due + 1, priority: -5 });
    await queue.close();
    while ((await serverNow(client)) <= due + 1) await new Promise((resolve) => setTimeout(resolve, 20));
    const keys = queueKeys('prio-bound');
    const taken: number[] = [];
    for (let call = 0; call < 2; call++) {
      for (const job of (await claim(client, keys, claimInput(1))).jobs) taken.push(job.header.priority);
    }
    return taken;
  } finally {
    await client.quit();
    await server.stop();
  }
}

/** Fill a fresh queue with JOBS due jobs, then take TAKEN of them `limit` at a time, acking as a worker does. */
async function run(kind: Case, limit: number): Promise<Figures> {
  const prioritized = kind !== 'flat';
  const server = await startRedis();
  const client = new Redis(server.url);
  try {
    const name = `prio-bench-${kind}-${limit}`;
    const queue = new Queue<number>(name, { connection: server.url, strategy: 'zpopmin' });
    const now = Date.now();
    const base = kind === 'promoted' ? now + AHEAD_MS : now - 60_000;
    for (let from = 0; from < JOBS; from += ADD_BATCH) {
      await queue.addBulk(
        Array.from({ length: Math.min(ADD_BATCH, JOBS - from) }, (_, i) => {
          const n = from + i;
          // Due times spread over a minute (the promoted case: over a second), so due order and
          // priority order disagree.
          const opts = { runAt: kind === 'promoted' ? base + (n % 1_000) : base + (n % 60_000) };
          return { payload: n, opts: prioritized ? { ...opts, priority: (n % LEVELS) - LEVELS / 2 } : opts };
        }),
      );
    }
    await queue.close();
    const keys = queueKeys(name);
    const inP = await client.zcard(keys.prioWaiting);
    if (kind === 'promoted') {
      // A bench, not a test: wait out the due times by the server's clock.
      while ((await serverNow(client)) < base + 1_000)
        await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const input = claimInput(limit);
    // Warm the script cache outside the measurement.
    let previous: ClaimedJob[] = (await claim(client, keys, input)).jobs;
    let lastPriority = -Infinity;
    let inOrder = true;
    let calls = 0;
    let taken = 0;
    const before = await evalshaStats(client);
    const started = performance.now();
    while (taken < TAKEN) {
      const acks: AckItem[] = previous.map((job) => ({
        member: job.member,
        knownDeadline: job.deadline,
        hadError: false,
        progressed: false,
      }));
      const out = await claim(client, keys, { ...input, acks });
      calls++;
      for (const job of out.jobs) {
        if (job.header.priority < lastPriority) inOrder = false;
        lastPriority = job.header.priority;
      }
      taken += out.jobs.length;
      previous = out.jobs;
      if (out.jobs.length === 0) throw new Error('the queue ran dry: raise --jobs or lower --taken');
    }
    const wallMs = performance.now() - started;
    const after = await evalshaStats(client);
    return {
      serverMs: (after.usec - before.usec) / 1_000,
      inP,
      serverUsPerJob: (after.usec - before.usec) / taken,
      wallUsPerJob: (wallMs * 1_000) / taken,
      callsPerJob: calls / taken,
      inOrder,
    };
  } finally {
    await client.quit();
    await server.stop();
  }
}

console.log(
  `claim cost, ${JOBS} due jobs, ${TAKEN} taken per case (each call acks the previous call's jobs)`,
);
const LABELS: Record<Case, string> = {
  flat: 'flat (no priority)',
  priorities: `${LEVELS} priorities, due`,
  promoted: `${LEVELS} priorities, p->r`,
};
for (const limit of [1, 25]) {
  for (const kind of ['flat', 'priorities', 'promoted'] as const) {
    const f = await run(kind, limit);
    console.log(
      `limit ${String(limit).padStart(2)}  ${LABELS[kind].padEnd(24)} server ${f.serverUsPerJob.toFixed(1).padStart(6)} µs/job (${f.serverMs.toFixed(0)} ms in all), ` +
        `wall ${f.wallUsPerJob.toFixed(1).padStart(6)} µs/job, ${f.callsPerJob.toFixed(2)} calls/job` +
        `${kind === 'promoted' ? `, ${f.inP} in p at the start` : ''}` +
        `${kind !== 'flat' ? `, priority order ${f.inOrder ? 'kept' : 'BROKEN'}` : ''} ` +
        `(load ${loadavg()
          .map((l) => l.toFixed(2))
          .join(' ')})`,
    );
  }
}
const bound = await promotionBound();
console.log(
  `promotion bound: 1000 due jobs of priority 5 and one of -5 (due 1 ms later): the first two claims took priorities ${bound.join(', ')}` +
    ` (${bound[0] === -5 ? 'strict' : 'not strict: the -5 job waited in p for the next call'})`,
);
