/**
 * Read-side operations on layout 2: get (get.lua), counts and the due histogram (counts.lua) and a page of one state's
 * jobs (list.lua). Each returns the stored record undecoded; src/queue/info.ts decodes it.
 */
import { wheelBucketKey, type QueueKeys } from '../redis/keys.js';
import type { RedisClient } from '../redis/connection.js';
import { runScript, script, type Reply } from '../redis/scripts.js';
import type { RecordedError } from './fail.js';
import { asArray, bytes, num, optionalStr, str } from './reply.js';
import { wheelTail, withBuckets, type Layout } from './wheel.js';

/** A job's state as delayq stores it ('scheduled' is what the scripts call waiting). */
export type JobState = 'scheduled' | 'active' | 'dead' | 'completed' | 'cancelled';

/** The states a page of jobs can be listed for: every one. */
export type ListState = JobState;

/** The states whose pages are ordered most recent first (the rest: earliest first). */
export const NEWEST_FIRST: ReadonlySet<ListState> = new Set(['dead', 'completed', 'cancelled']);

/** Who holds (active) or last held a job: the worker registry entry of its record's holder number. */
export interface Holder {
  workerId: string;
  /** When that worker started (its registration), epoch ms. */
  workerStartedAt: number;
}

/** Everything stored about one job, not yet decoded. */
export interface RawJob {
  id: string;
  state: JobState;
  /** The record as stored: header + payload; for a completed job header + result (when kept). */
  record: Buffer;
  /** Due time (scheduled), lease deadline (active), died at (dead), completed at or cancelled at. */
  score: number;
  /** The lease member "<claims>.<claimedAt>|<id>" of an active job, else null. */
  member: string | null;
  holder: Holder | null;
  lastError: RecordedError | null;
  /** The running attempt's last progress value (JSON text), or null when it reported none. */
  progress: string | null;
}

/** Parse a worker registry entry "<worker id>|<started ms>" (the worker id may contain '|'). */
export function parseHolder(raw: string | null): Holder | null {
  if (raw === null) return null;
  const bar = raw.lastIndexOf('|');
  if (bar < 0) return { workerId: raw, workerStartedAt: 0 };
  return { workerId: raw.slice(0, bar), workerStartedAt: Number(raw.slice(bar + 1)) };
}

function parseError(raw: string | null): RecordedError | null {
  if (raw === null) return null;
  try {
    return JSON.parse(raw) as RecordedError;
  } catch {
    return { name: 'Error', message: raw };
  }
}

function stateOf(scriptState: string): JobState {
  return scriptState === 'waiting' ? 'scheduled' : (scriptState as JobState);
}

/** The wheel strategy's extra keys, after a read script's fixed ones (wheel.lua's wheel_keys). */
function wheelKeys(keys: QueueKeys, layout: Layout): string[] {
  return layout.kind === 'wheel' ? [keys.ready, keys.wheel, keys.wheelCount] : [];
}

/** The wheel strategy's granularity argument, which goes with wheelKeys. */
function wheelArgs(layout: Layout): number[] {
  return layout.kind === 'wheel' ? [layout.granularityMs] : [];
}

/** Everything about job `id`, or null when there is no such job. */
export async function getJob(
  client: RedisClient,
  keys: QueueKeys,
  id: string,
  layout: Layout,
): Promise<RawJob | null> {
  const reply = await runScript(
    client,
    script('get'),
    [
      keys.records,
      keys.waiting,
      keys.prioWaiting,
      keys.prioReady,
      keys.groupJobs,
      keys.leases,
      keys.completed,
      keys.cancelled,
      keys.dead,
      keys.errors,
      keys.holders,
      keys.progress,
      ...wheelKeys(keys, layout),
    ],
    [id, ...wheelArgs(layout)],
  );
  if (!Array.isArray(reply)) return null;
  return rawJob(id, str(reply, 0, 'get'), reply, 1, 'get');
}

/** One job from a reply (get.lua, list.lua, group-jobs.lua): record, score, error, holder, progress, member from `at`. */
export function rawJob(id: string, state: string, reply: Reply[], at: number, name: string): RawJob {
  return {
    id,
    state: stateOf(state),
    record: bytes(reply, at, name),
    score: num(reply, at + 1, name),
    lastError: parseError(optionalStr(reply, at + 2)),
    holder: parseHolder(optionalStr(reply, at + 3)),
    progress: optionalStr(reply, at + 4),
    member: optionalStr(reply, at + 5),
  };
}

/** How many jobs are in each state; `due` is the part of `scheduled` whose time has come. */
export interface Counts {
  scheduled: number;
  /** Waiting jobs whose due time has come, of every class (default, prioritized, grouped, wheel). */
  due: number;
  /**
   * The part of `due` no worker may start now because of its group: the group is at its
   * concurrency bound (or paused), or waits for its rate limit's next token.
   */
  held: number;
  active: number;
  dead: number;
  /** Completed jobs still kept (bounded by count and age). */
  completed: number;
  /** Cancelled jobs still kept (bounded by count and age). */
  cancelled: number;
}

/** How many waiting jobs fall due in each of `slices` slices of `sliceMs` after the server's now. */
export interface HistogramRequest {
  sliceMs: number;
  slices: number;
}

/** One partition's figures (counts.lua): counts, pause, the server's now, the next due time. */
export interface PartitionCounts extends Counts {
  paused: boolean;
  now: number;
  /** The earliest due time of a waiting job; -1: none. */
  nextDue: number;
  /** With a HistogramRequest: jobs due by `now`, then per slice (slice i: due in (now + i·ms, now + (i+1)·ms]). */
  histogram: { overdue: number; counts: number[] } | null;
}

/**
 * Everything counts.lua reads of one partition at one server instant. `groupConcurrency` is the
 * queue's recorded group bound (0 or undefined: none known), which says how many due grouped jobs
 * are held. A wheel queue's buckets are passed as the script names them (withBuckets).
 */
export async function counts(
  client: RedisClient,
  keys: QueueKeys,
  layout: Layout,
  options: { groupConcurrency?: number | undefined; histogram?: HistogramRequest | undefined } = {},
): Promise<PartitionCounts> {
  const { histogram } = options;
  const head = [
    keys.waiting,
    keys.prioWaiting,
    keys.prioReady,
    keys.groupJobs,
    keys.groupsWaiting,
    keys.groupsReady,
    keys.groupCounts,
    keys.leases,
    keys.dead,
    keys.completed,
    keys.cancelled,
    keys.paused,
  ];
  const args = [options.groupConcurrency ?? 0, histogram?.sliceMs ?? 0, histogram?.slices ?? 0];
  const reply = asArray(
    await withBuckets(layout, [], (starts) => {
      const tail = wheelTail(keys, layout, starts);
      return runScript(client, script('counts'), [...head, ...tail.keys], [...args, ...tail.args]);
    }),
    'counts',
  );
  const slices = histogram ? histogram.slices : 0;
  return {
    scheduled: num(reply, 0, 'counts'),
    due: num(reply, 1, 'counts'),
    held: num(reply, 2, 'counts'),
    active: num(reply, 3, 'counts'),
    dead: num(reply, 4, 'counts'),
    completed: num(reply, 5, 'counts'),
    cancelled: num(reply, 6, 'counts'),
    paused: num(reply, 7, 'counts') === 1,
    now: num(reply, 8, 'counts'),
    nextDue: num(reply, 9, 'counts'),
    histogram: histogram
      ? {
          overdue: num(reply, 10, 'counts'),
          counts: Array.from({ length: slices }, (_, i) => num(reply, 11 + i, 'counts')),
        }
      : null,
  };
}

/** The list.lua state of a page: the scripts say 'waiting' for 'scheduled'. */
function scriptState(state: ListState): string {
  return state === 'scheduled' ? 'waiting' : state;
}

/**
 * A page of one partition's jobs in `state`, with their stored records, read atomically by
 * list.lua. Scheduled jobs come due prioritized ones first (claim order), then by due time;
 * dead, completed and cancelled most recent first; active by lease deadline.
 */
export async function listJobs(
  client: RedisClient,
  keys: QueueKeys,
  state: ListState,
  page: { offset: number; limit: number },
  layout: Layout,
): Promise<RawJob[]> {
  const listKeys = [
    keys.records,
    keys.waiting,
    keys.prioWaiting,
    keys.prioReady,
    keys.leases,
    keys.completed,
    keys.cancelled,
    keys.dead,
    keys.errors,
    keys.holders,
    keys.progress,
  ];
  let args: Array<string | number>;
  if (state === 'scheduled' && layout.kind === 'wheel') {
    // The wheel's waiting jobs live in bucket lists the script cannot name: read the ids here.
    const ids = await wheelPage(client, keys, page.offset, page.limit);
    if (ids.length === 0) return [];
    listKeys.push(...wheelKeys(keys, layout));
    args = ['ids', 0, ids.length, 0, layout.granularityMs, ...ids];
  } else {
    if (state === 'scheduled') listKeys.push(keys.groupJobs);
    args = [scriptState(state), page.offset, page.limit, NEWEST_FIRST.has(state) ? 1 : 0];
  }
  const reply = asArray(await runScript(client, script('list'), listKeys, args), 'list');
  const out: RawJob[] = [];
  for (let i = 0; i + 6 < reply.length; i += 7) {
    out.push(rawJob(str(reply, i, 'list'), scriptState(state), reply, i + 1, 'list'));
  }
  return out;
}

/**
 * Ids of a page of the wheel's waiting jobs: ready first, then each bucket in time order (within a
 * bucket in the order put; promotion sorts them). Not one atomic snapshot: a job promoted while
 * the page is read may be missed or seen twice. O(offset + limit) plus one LLEN per bucket skipped.
 */
async function wheelPage(
  client: RedisClient,
  keys: QueueKeys,
  offset: number,
  limit: number,
): Promise<string[]> {
  const lists = [
    keys.ready,
    ...(await client.zrange(keys.wheel, 0, -1)).map((s) => wheelBucketKey(keys, Number(s))),
  ];
  const ids: string[] = [];
  let skip = offset;
  for (const list of lists) {
    if (ids.length >= limit) break;
    const length = await client.llen(list);
    if (skip >= length) {
      skip -= length;
      continue;
    }
    ids.push(...(await client.lrange(list, skip, skip + (limit - ids.length) - 1)));
    skip = 0;
  }
  return ids;
}
