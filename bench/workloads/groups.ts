/**
 * Groups (issue 16): claim throughput and the smallest tenants' lateness with G = 1, 100 and 10,000
 * groups under a skewed (Zipf, s = 1.1) load, delayq only (the other systems keep groups in paid
 * tiers or have none). The jobs are added first, due over a short window from a moment after the
 * adds, so the workers meet a backlog of due jobs, as when a large tenant floods the queue; one
 * worker of concurrency 50, group concurrency 1 (one job at a time per tenant), handlers that
 * return at once.
 *
 * Figures: jobs/s from the first start to the last, and the p99 lateness (claim time - due, Redis
 * clock) of the jobs of the smallest tenants (the tenth of the groups with the fewest jobs; with
 * G = 1, the one group): what turns buy a small tenant while a big one drains.
 */
import { performance } from 'node:perf_hooks';
import { Queue, Worker } from '../../src/index.js';
import { chunks, freshQueue, sleep, type Context } from '../lib/context.js';
import { reset } from '../lib/redis.js';
import type { Profile } from '../lib/profile.js';
import { quantile } from '../lib/stats.js';

const ZIPF_S = 1.1;
const CONCURRENCY = 50;
/** The due times are spread over this window, from LEAD_MS after the adds finished. */
const SPREAD_MS = 1_000;
const LEAD_MS = 300;
/** Jobs per case: the full run's and the quick run's. */
const JOBS = { full: 50_000, quick: 5_000 } as const;
const GROUP_COUNTS = [1, 100, 10_000] as const;

/** What the groups workload does, for the report. */
export function describeGroupsWorkload(profile: Pick<Profile, 'name' | 'reps'>): string {
  const counts = GROUP_COUNTS.map((g) => g.toLocaleString('en-US')).join(', ');
  return `delayq only. ${JOBS[profile.name].toLocaleString('en-US')} jobs over G = ${counts} groups, assigned by a Zipf law (s = ${ZIPF_S}: the largest tenant has most of the jobs), added first and due over ${SPREAD_MS / 1000} s from ${LEAD_MS} ms after the adds, so the worker meets a backlog of due jobs; one worker in the bench process at concurrency ${CONCURRENCY}, \`groups: { concurrency: 1 }\` (one job at a time per tenant), handlers that return at once. Throughput from the first start to the last; lateness is claim time minus due time (Redis clock) of the jobs of the smallest tenants (the tenth of the groups with the fewest jobs; with G = 1, the one group); ${profile.reps} repetition(s). \`--only groups\` runs it alone.`;
}

/** Group index (0 = the largest tenant) of each of `jobs` jobs over `groups` groups, Zipf(s). */
function zipfAssignments(jobs: number, groups: number): number[] {
  const weights = Array.from({ length: groups }, (_, k) => 1 / Math.pow(k + 1, ZIPF_S));
  const total = weights.reduce((a, b) => a + b, 0);
  const cumulative: number[] = [];
  let sum = 0;
  for (const w of weights) cumulative.push((sum += w / total));
  // Every group gets at least one job (so each tenant exists), the rest drawn from the weights.
  const out = Array.from({ length: Math.min(groups, jobs) }, (_, g) => g);
  let seed = 7;
  const random = (): number => {
    // A fixed LCG: the same load for every run and system.
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
    return seed / 2 ** 31;
  };
  while (out.length < jobs) {
    const u = random();
    let lo = 0;
    let hi = groups - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cumulative[mid]! < u) lo = mid + 1;
      else hi = mid;
    }
    out.push(lo);
  }
  return out;
}

async function runOne(
  ctx: Context,
  groups: number,
  jobs: number,
): Promise<{ jobsPerSec: number; smallP99: number; allP99: number; smallJobs: number }> {
  await reset(ctx.redis.control);
  const name = freshQueue(`groups-${groups}`);
  const queue = new Queue<number>(name, { connection: ctx.redis.url });
  const assigned = zipfAssignments(jobs, groups);
  const perGroup = new Map<number, number>();
  for (const g of assigned) perGroup.set(g, (perGroup.get(g) ?? 0) + 1);
  // The smallest tenants: the tenth of the groups with the fewest jobs (at least one group).
  const bySize = [...perGroup].sort((a, b) => a[1] - b[1] || b[0] - a[0]);
  const small = new Set(bySize.slice(0, Math.max(1, Math.floor(groups / 10))).map(([g]) => g));
  const [s, us] = await ctx.redis.control.time();
  const start = Number(s) * 1000 + Math.floor(Number(us) / 1000) + LEAD_MS + jobs / 50;
  const items = assigned.map((g, i) => ({
    payload: g,
    opts: { group: `tenant-${g}`, runAt: start + Math.floor((i * SPREAD_MS) / jobs) },
  }));
  for (const batch of chunks(items, ctx.profile.bulkSize)) await queue.addBulk(batch);

  const lateness: number[] = [];
  const smallLateness: number[] = [];
  let first = Infinity;
  let last = 0;
  let done = 0;
  const worker = new Worker<number>(
    name,
    async (job) => {
      const late = job.claimedAt.getTime() - job.runAt.getTime();
      lateness.push(late);
      if (small.has(job.payload)) smallLateness.push(late);
      first = Math.min(first, performance.now());
      last = performance.now();
      done++;
    },
    { connection: ctx.redis.url, concurrency: CONCURRENCY, groups: { concurrency: 1 } },
  );
  while (done < jobs) await sleep(20);
  await worker.close();
  await queue.close();
  return {
    jobsPerSec: (jobs / Math.max(1, last - first)) * 1000,
    smallP99: quantile(smallLateness, 0.99),
    allP99: quantile(lateness, 0.99),
    smallJobs: smallLateness.length,
  };
}

/** Run the groups workload (delayq only). */
export async function runGroups(ctx: Context): Promise<void> {
  if (!ctx.systems.includes('delayq')) return;
  const jobs = JOBS[ctx.profile.name];
  const lines: string[] = [];
  for (let rep = 0; rep < ctx.profile.reps; rep++) {
    for (const groups of GROUP_COUNTS) {
      const out = await runOne(ctx, groups, jobs);
      ctx.rec.add(
        'groups',
        `claim throughput, G = ${groups} (Zipf)`,
        'jobs/s',
        'higher',
        'delayq',
        out.jobsPerSec,
      );
      ctx.rec.add(
        'groups',
        `smallest tenants' p99 lateness, G = ${groups}`,
        'ms',
        'lower',
        'delayq',
        out.smallP99,
      );
      const line = `G = ${groups}: ${Math.round(out.jobsPerSec)} jobs/s, smallest tenants' p99 lateness ${out.smallP99} ms (${out.smallJobs} jobs), all jobs' p99 ${out.allP99} ms`;
      lines.push(line);
      ctx.log(`  groups ${line}`);
    }
  }
  ctx.rec.details['groups'] = lines;
}
