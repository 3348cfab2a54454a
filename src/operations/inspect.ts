/** Read-side operations: get (get.lua), counts (counts.lua), and listing a state's jobs. */
import { wheelBucketKey, type QueueKeys } from '../redis/keys.js';
import type { RedisClient } from '../redis/connection.js';
import { runScript, script } from '../redis/scripts.js';
import { parseMeta, type JobMeta } from './meta.js';
import type { RecordedError } from './fail.js';
import { asArray, bytes, num, optionalStr, str } from './reply.js';
import type { Layout } from './wheel.js';

/** A job's state as delayq stores it. */
export type JobState = 'scheduled' | 'active' | 'dead' | 'completed' | 'cancelled';

/** Everything stored about one job, not yet decoded. */
export interface RawJob {
  id: string;
  state: JobState;
  envelope: Buffer;
  meta: JobMeta;
  /**
   * Due time (scheduled), lease deadline (active), died at (dead), finished at (completed) or
   * cancelled at (cancelled: the record is gone, so envelope is empty and meta blank).
   */
  score: number;
  lease: { token: string; startedAt: number; workerId: string } | null;
  lastError: RecordedError | null;
  /** The running attempt's last progress value (JSON text), or null when it reported none. */
  progress: string | null;
}

/** Parse a "token|startMs|workerId" lease record. */
export function parseLease(raw: string | null): RawJob['lease'] {
  if (raw === null) return null;
  const [token = '', started = '0', ...worker] = raw.split('|');
  return { token, startedAt: Number(started), workerId: worker.join('|') };
}

function parseError(raw: string | null): RecordedError | null {
  if (raw === null) return null;
  try {
    return JSON.parse(raw) as RecordedError;
  } catch {
    return { name: 'Error', message: raw };
  }
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
      keys.schedule,
      keys.jobs,
      keys.meta,
      keys.active,
      keys.leases,
      keys.dead,
      keys.errors,
      keys.completed,
      keys.progress,
      keys.cancelled,
      ...(layout.kind === 'wheel' ? [keys.ready] : []),
    ],
    [id],
  );
  if (!Array.isArray(reply)) return null;
  return {
    id,
    state: str(reply, 0, 'get') as JobState,
    envelope: bytes(reply, 1, 'get'),
    meta: parseMeta(str(reply, 2, 'get'), id),
    score: num(reply, 3, 'get'),
    lease: parseLease(optionalStr(reply, 4)),
    lastError: parseError(optionalStr(reply, 5)),
    progress: optionalStr(reply, 6),
  };
}

/** How many jobs are in each state; `due` is the part of `scheduled` whose time has come. */
export interface Counts {
  scheduled: number;
  due: number;
  active: number;
  dead: number;
}

/** Counts by the server clock, plus that clock and the next due time (-1: none). */
export async function counts(
  client: RedisClient,
  keys: QueueKeys,
  layout: Layout,
): Promise<Counts & { now: number; nextDue: number }> {
  const wheel = layout.kind === 'wheel' ? [keys.ready, keys.wheel, keys.wheelCount] : [];
  const reply = asArray(
    await runScript(client, script('counts'), [keys.schedule, keys.active, keys.dead, ...wheel], []),
    'counts',
  );
  return {
    scheduled: num(reply, 0, 'counts'),
    due: num(reply, 1, 'counts'),
    active: num(reply, 2, 'counts'),
    dead: num(reply, 3, 'counts'),
    now: num(reply, 4, 'counts'),
    nextDue: num(reply, 5, 'counts'),
  };
}

/** A page of a state's jobs with their stored records, in one MULTI so the page is consistent. */
export async function listJobs(
  client: RedisClient,
  keys: QueueKeys,
  state: Exclude<JobState, 'completed' | 'cancelled'>,
  page: { offset: number; limit: number; newestFirst: boolean },
  layout: Layout,
): Promise<RawJob[]> {
  const set = state === 'scheduled' ? keys.schedule : state === 'active' ? keys.active : keys.dead;
  const stop = page.offset + page.limit - 1;
  const members: string[] = [];
  const scores: Array<number | null> = [];
  if (state === 'scheduled' && layout.kind === 'wheel') {
    members.push(...(await wheelPage(client, keys, page.offset, page.limit)));
    scores.push(...members.map(() => null));
  } else {
    const ids = page.newestFirst
      ? await client.zrevrange(set, page.offset, stop, 'WITHSCORES')
      : await client.zrange(set, page.offset, stop, 'WITHSCORES');
    for (let i = 0; i < ids.length; i += 2) {
      members.push(ids[i] ?? '');
      scores.push(Number(ids[i + 1]));
    }
  }
  if (members.length === 0) return [];
  const results = await client
    .multi()
    .hmgetBuffer(keys.jobs, ...members)
    .hmget(keys.meta, ...members)
    .hmget(keys.leases, ...members)
    .hmget(keys.errors, ...members)
    .hmget(keys.progress, ...members)
    .exec();
  if (!results) throw new Error('listJobs: transaction aborted');
  const column = <T>(i: number): T[] => {
    const [err, value] = results[i] ?? [new Error('missing reply'), null];
    if (err) throw err;
    return value as T[];
  };
  const envelopes = column<Buffer | null>(0);
  const metas = column<string | null>(1);
  const leases = column<string | null>(2);
  const errors = column<string | null>(3);
  const progress = column<string | null>(4);
  const out: RawJob[] = [];
  members.forEach((id, i) => {
    const envelope = envelopes[i];
    const meta = metas[i];
    // A job removed between the ZRANGE and the MULTI is simply not on this page.
    if (!envelope || !meta) return;
    const parsed = parseMeta(meta, id);
    out.push({
      id,
      state,
      envelope,
      meta: parsed,
      score: scores[i] ?? parsed.r ?? 0,
      lease: parseLease(leases[i] ?? null),
      lastError: parseError(errors[i] ?? null),
      progress: progress[i] ?? null,
    });
  });
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
