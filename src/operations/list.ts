/** The `list` operation (list.lua): a page of one partition's jobs in one state, with their records. */
import type { RedisClient } from '../redis/connection.js';
import { wheelBucketKey, type QueueKeys } from '../redis/keys.js';
import { runScript, script } from '../redis/scripts.js';
import { rawJob, type JobInfoState, type RawJob } from './raw-job.js';
import { asArray, str } from './reply.js';
import { wheelTail, type Layout } from './wheel.js';

/** The states a page of jobs can be listed for: every one, flow parents waiting for their children included. */
export type ListState = JobInfoState;

/** The states whose pages are ordered most recent first (the rest: earliest first). */
export const NEWEST_FIRST: ReadonlySet<ListState> = new Set(['dead', 'completed', 'cancelled']);

/** The list.lua state of a page: the scripts say 'waiting' for 'scheduled'. */
function scriptState(state: ListState): string {
  return state === 'scheduled' ? 'waiting' : state;
}

/**
 * A page of one partition's jobs in `state`, with their stored records, read atomically by
 * list.lua. Scheduled jobs come due prioritized ones first (claim order), then by due time;
 * dead, completed and cancelled most recent first; active by lease deadline; flow parents
 * waiting for their children by their own due time.
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
    listKeys.push(...wheelTail(keys, layout).keys);
    args = ['ids', 0, ids.length, 0, layout.granularityMs, ...ids];
  } else {
    if (state === 'scheduled') listKeys.push(keys.groupJobs);
    if (state === 'waiting-children') listKeys.push(keys.flowsWaiting);
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
