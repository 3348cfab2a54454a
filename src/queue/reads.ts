/**
 * Reads of a whole queue, over every partition: counts (with the next due time and the server's
 * now), a page of one state's jobs merged across partitions, and the counters (totals and
 * per-second snapshots). Queue, the Inspector and the metrics share them.
 */
import type { QueueContext } from '../definition/context.js';
import { ValidationError } from '../errors.js';
import { assertKnownOptions } from '../option-names.js';
import { counts, type Counts, type HistogramRequest, type PartitionCounts } from '../operations/counts.js';
import { listJobs, NEWEST_FIRST, type ListState } from '../operations/list.js';
import type { RawJob } from '../operations/raw-job.js';
import {
  TOTAL_NAMES,
  readSnapshots,
  readTotals,
  zeroCounters,
  type CounterSnapshot,
  type CounterValues,
} from '../operations/stats.js';
import type { Layout } from '../operations/wheel.js';
import { groupJobs } from '../operations/group-jobs.js';
import { validateGroup } from '../job-options.js';
import { partitionOf } from '../partition/index.js';
import { DEFAULT_GROUP_CONCURRENCY } from '../operations/claim.js';

/**
 * Counts summed over the partitions, whether any partition is paused, the server's now, and the
 * earliest due time (null: none).
 */
export interface QueueCounts extends Counts {
  paused: boolean;
  now: number;
  nextDue: number | null;
}

/** Jobs due in each of `counts.length` slices of `bucketMs` after `start`, plus those already due. */
export interface DueHistogram {
  /** The server's now the slices start at. */
  start: number;
  bucketMs: number;
  /** Waiting jobs whose due time is at or before `start` (the counts' `due`). */
  overdue: number;
  counts: number[];
}

/**
 * The counts of every partition of `ctx`, each read at one server instant by counts.lua, every
 * class of waiting job (default, prioritized, grouped, wheel) included: the one computation behind
 * queue.counts(), the Inspector (CLI, dashboard) and the metrics.
 */
export async function countAll(ctx: QueueContext): Promise<QueueCounts> {
  return sumCounts(await readAll(ctx));
}

/** The most slices a due histogram has (counts.lua's MAX_SLICES): a day of minutes. */
export const MAX_HISTOGRAM_BUCKETS = 1440;

/** countAll with the due histogram of `buckets` slices of `bucketMs`, read by the same calls. */
export async function figuresAll(
  ctx: QueueContext,
  { bucketMs, buckets }: { bucketMs: number; buckets: number },
): Promise<QueueCounts & { histogram: DueHistogram }> {
  if (!Number.isInteger(bucketMs) || bucketMs < 1) {
    throw new ValidationError(
      `bucketMs must be a whole number of ms >= 1, got ${String(bucketMs)}`,
      'bucketMs',
    );
  }
  if (!Number.isInteger(buckets) || buckets < 1 || buckets > MAX_HISTOGRAM_BUCKETS) {
    throw new ValidationError(
      `buckets must be a whole number from 1 to ${MAX_HISTOGRAM_BUCKETS}, got ${String(buckets)}`,
      'buckets',
    );
  }
  const all = await readAll(ctx, { sliceMs: bucketMs, slices: buckets });
  const sum = sumCounts(all);
  // Each partition (its own slot) is read at its own instant; their slices are summed as if they
  // started together, at the latest of those nows: apart by a round trip at most.
  const histogram: DueHistogram = {
    start: sum.now,
    bucketMs,
    overdue: all.reduce((n, c) => n + (c.histogram?.overdue ?? 0), 0),
    counts: Array.from({ length: buckets }, (_, i) =>
      all.reduce((n, c) => n + (c.histogram?.counts[i] ?? 0), 0),
    ),
  };
  return { ...sum, histogram };
}

/** counts.lua on every partition, with the queue's recorded group bound. */
async function readAll(ctx: QueueContext, histogram?: HistogramRequest): Promise<PartitionCounts[]> {
  const { layout, record } = await ctx.settle();
  const groupConcurrency = record.groups?.concurrency ?? DEFAULT_GROUP_CONCURRENCY;
  return Promise.all(
    ctx.partitions.map((keys) => counts(ctx.client, keys, layout, { groupConcurrency, histogram })),
  );
}

function sumCounts(all: readonly PartitionCounts[]): QueueCounts {
  const sum: QueueCounts = {
    scheduled: 0,
    due: 0,
    held: 0,
    active: 0,
    dead: 0,
    completed: 0,
    cancelled: 0,
    waitingChildren: 0,
    paused: false,
    now: 0,
    nextDue: null,
  };
  for (const c of all) {
    sum.scheduled += c.scheduled;
    sum.due += c.due;
    sum.held += c.held;
    sum.active += c.active;
    sum.dead += c.dead;
    sum.completed += c.completed;
    sum.cancelled += c.cancelled;
    sum.waitingChildren += c.waitingChildren;
    sum.paused ||= c.paused;
    sum.now = Math.max(sum.now, c.now);
    if (c.nextDue >= 0 && (sum.nextDue === null || c.nextDue < sum.nextDue)) sum.nextDue = c.nextDue;
  }
  return sum;
}

/** How many jobs `counts` says are in `state` (the total a page of that state belongs to). */
export function countOf(counts: Counts, state: ListState): number {
  return state === 'waiting-children' ? counts.waitingChildren : counts[state];
}

/** The keys of a listing page. */
const PAGE_KEYS: ReadonlySet<string> = new Set(['offset', 'limit']);

/** A listing page: offset and limit, checked. */
export function checkPage(page: { offset?: number; limit?: number }): { offset: number; limit: number } {
  if (typeof page !== 'object' || page === null) {
    throw new ValidationError('a page must be { offset?, limit? }', 'page');
  }
  assertKnownOptions(page, PAGE_KEYS, 'page key');
  const offset = page.offset ?? 0;
  const limit = page.limit ?? 50;
  if (!Number.isInteger(offset) || offset < 0)
    throw new ValidationError(`offset must be a whole number >= 0`, 'offset');
  if (!Number.isInteger(limit) || limit < 1 || limit > 10_000) {
    throw new ValidationError(`limit must be a whole number from 1 to 10000`, 'limit');
  }
  return { offset, limit };
}

/**
 * A page of jobs in `state` over every partition: scheduled due prioritized ones first, then by
 * due time; active by lease deadline; dead, completed and cancelled most recent first;
 * waiting-children (flow parents) by their own due time.
 */
export async function listAll(
  ctx: QueueContext,
  layout: Layout,
  state: ListState,
  page: { offset: number; limit: number },
): Promise<RawJob[]> {
  const { offset, limit } = page;
  const newestFirst = NEWEST_FIRST.has(state);
  if (ctx.partitions.length === 1) {
    return listJobs(ctx.client, ctx.keys, state, { offset, limit }, layout);
  }
  // The page of the merged order holds at most offset + limit jobs of each partition: read those
  // from every partition, merge by score, cut the page. Deep pages cost P times their depth.
  // (Scheduled: merged by due time, so across partitions priorities are approximate, as claims are.)
  const pages = await Promise.all(
    ctx.partitions.map((keys) =>
      listJobs(ctx.client, keys, state, { offset: 0, limit: offset + limit }, layout),
    ),
  );
  const merged = pages.flat().sort((a, b) => (newestFirst ? b.score - a.score : a.score - b.score));
  return merged.slice(offset, offset + limit);
}

/**
 * A page of one group's scheduled jobs (by due time) or active ones (by lease deadline), from the
 * group's partition. Finished jobs are not kept by group: other states are refused.
 */
export async function listGroup(
  ctx: QueueContext,
  state: ListState,
  group: unknown,
  page: { offset: number; limit: number },
): Promise<RawJob[]> {
  const name = validateGroup(group);
  if (state !== 'scheduled' && state !== 'active') {
    // fw holds a flow's parents by due time alone: a grouped parent joins its group's jobs when
    // its last child completed.
    const why =
      state === 'waiting-children'
        ? 'flow parents waiting for their children are not kept by group'
        : 'finished jobs are not kept by group';
    throw new ValidationError(
      `list by group takes 'scheduled' or 'active', got ${JSON.stringify(state)}: ${why}; leave group out to list ${String(state)} jobs`,
      'group',
    );
  }
  const keys = ctx.partitions[partitionOf(name, ctx.partitionsBase)]!;
  return groupJobs(ctx.client, keys, { state, group: name, ...page });
}

/** The queue's counter totals, summed over the partitions (the same from any process). */
export async function totalsAll(ctx: QueueContext): Promise<CounterValues> {
  const all = await Promise.all(ctx.partitions.map((keys) => readTotals(ctx.client, keys)));
  const sum = zeroCounters();
  for (const totals of all) {
    for (const name of TOTAL_NAMES) sum[name] += totals[name];
  }
  return sum;
}

/** Each partition's counter snapshots of the seconds `from` to `to` (epoch s), oldest first. */
export function snapshotsAll(ctx: QueueContext, from: number, to: number): Promise<CounterSnapshot[][]> {
  return Promise.all(ctx.partitions.map((keys) => readSnapshots(ctx.client, keys, from, to)));
}
