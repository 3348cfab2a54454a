/**
 * Operations on one partition's groups (issue 29): a page of groups by backlog, pause, resume, a
 * chunk of a group's cancel, and a page of one group's jobs. src/queue/groups.ts spans partitions.
 */
import type { RedisClient } from '../redis/connection.js';
import type { QueueKeys } from '../redis/keys.js';
import { runScript, script } from '../redis/scripts.js';
import { rawJob, type RawJob } from './raw-job.js';
import { asArray, num, str } from './reply.js';
import { UNKNOWN_GROUP_CONCURRENCY } from './waiting-keys.js';

/** One group as `queue.groups.list()` shows it. */
export interface GroupInfo {
  /** The group's name. */
  group: string;
  /** Its jobs waiting (due or not): its backlog. */
  waiting: number;
  /** Of those, how many are due now (waiting for a slot, a token, a worker or the resume). */
  due: number;
  /** Its jobs running now (leased by a worker). */
  running: number;
  /** Whether workers are kept from starting its jobs (queue.groups.pause). */
  paused: boolean;
}

/** A page of one partition's groups, most waiting first, and how many groups have jobs waiting. */
export async function listGroups(
  client: RedisClient,
  keys: QueueKeys,
  page: { offset: number; limit: number },
): Promise<{ withWaiting: number; groups: GroupInfo[] }> {
  const reply = asArray(
    await runScript(
      client,
      script('groups-list'),
      [keys.groupBacklog, keys.groupJobs, keys.groupCounts],
      [page.offset, page.limit],
    ),
    'groups-list',
  );
  const groups: GroupInfo[] = [];
  for (let i = 1; i + 4 < reply.length; i += 5) {
    groups.push({
      group: str(reply, i, 'groups-list'),
      waiting: num(reply, i + 1, 'groups-list'),
      due: num(reply, i + 2, 'groups-list'),
      running: num(reply, i + 3, 'groups-list'),
      paused: num(reply, i + 4, 'groups-list') === 1,
    });
  }
  return { withWaiting: num(reply, 0, 'groups-list'), groups };
}

/** Pause group `group` in its partition; false when it was paused already. */
export async function pauseGroup(client: RedisClient, keys: QueueKeys, group: string): Promise<boolean> {
  const reply = await runScript(
    client,
    script('group-pause'),
    [keys.groupsWaiting, keys.groupsReady, keys.groupCounts],
    [group],
  );
  return reply === 1;
}

/** Resume group `group`, waking workers when it can run; false when it was not paused. */
export async function resumeGroup(
  client: RedisClient,
  keys: QueueKeys,
  group: string,
  groupConcurrency: number = UNKNOWN_GROUP_CONCURRENCY,
): Promise<boolean> {
  const reply = await runScript(
    client,
    script('group-resume'),
    [keys.groupJobs, keys.groupsWaiting, keys.groupsReady, keys.groupCounts, keys.wake],
    [group, groupConcurrency],
  );
  return reply === 1;
}

/** Most waiting jobs one group-cancel.lua call cancels: a big group is cancelled in chunks. */
export const GROUP_CANCEL_CHUNK = 500;

/** Cancel up to `max` of group `group`'s waiting jobs (earliest first): how many, and how many are left. */
export async function cancelGroupChunk(
  client: RedisClient,
  keys: QueueKeys,
  input: { group: string; max: number; eventsCap: number },
): Promise<{ cancelled: number; left: number }> {
  const reply = asArray(
    await runScript(
      client,
      script('group-cancel'),
      [
        keys.groupJobs,
        keys.groupsWaiting,
        keys.groupsReady,
        keys.groupCounts,
        keys.groupBacklog,
        keys.records,
        keys.cancelled,
        keys.errors,
        keys.counters,
        keys.events,
      ],
      [input.group, input.max, input.eventsCap],
    ),
    'group-cancel',
  );
  return { cancelled: num(reply, 0, 'group-cancel'), left: num(reply, 1, 'group-cancel') };
}

/** A page of group `group`'s waiting jobs (due order) or running ones (lease deadline order). */
export async function groupJobs(
  client: RedisClient,
  keys: QueueKeys,
  input: { state: 'scheduled' | 'active'; group: string; offset: number; limit: number },
): Promise<RawJob[]> {
  const scriptState = input.state === 'scheduled' ? 'waiting' : 'active';
  const reply = asArray(
    await runScript(
      client,
      script('group-jobs'),
      [keys.records, keys.groupJobs, keys.leases, keys.errors, keys.holders, keys.progress],
      [scriptState, input.group, input.offset, input.limit],
    ),
    'group-jobs',
  );
  const out: RawJob[] = [];
  for (let i = 0; i + 6 < reply.length; i += 7) {
    out.push(rawJob(str(reply, i, 'group-jobs'), scriptState, reply, i + 1, 'group-jobs'));
  }
  return out;
}

/** Groups one group-refresh.lua call puts back in their state. */
const REFRESH_BATCH = 500;

/**
 * Put every group of one partition that has running jobs or is paused back in the state its jobs
 * and running count say under `groupConcurrency` (group-refresh.lua), waking workers when one can
 * run. Those are the groups a changed bound can hold wrongly out of turn; gc holds exactly them
 * (and rate buckets), so this reads O(running groups), never the waiting jobs.
 */
export async function refreshGroups(
  client: RedisClient,
  keys: QueueKeys,
  groupConcurrency: number,
): Promise<void> {
  let cursor = '0';
  do {
    const [next, flat] = await client.hscan(keys.groupCounts, cursor, 'COUNT', REFRESH_BATCH);
    cursor = next;
    const groups = flat.filter((field, i) => i % 2 === 0 && !field.includes('\0'));
    for (let at = 0; at < groups.length; at += REFRESH_BATCH) {
      await runScript(
        client,
        script('group-refresh'),
        [keys.groupJobs, keys.groupsWaiting, keys.groupsReady, keys.groupCounts, keys.wake],
        [groupConcurrency, ...groups.slice(at, at + REFRESH_BATCH)],
      );
    }
  } while (cursor !== '0');
}

/**
 * What one partition's groups hold in all: waiting grouped jobs (gq's size), running ones (gc's
 * counts, paused marks taken off) and groups with waiting jobs (gn's size). O(running groups).
 */
export async function groupTotals(
  client: RedisClient,
  keys: QueueKeys,
): Promise<{ waiting: number; running: number; groups: number }> {
  const [waiting, groups, counts] = await Promise.all([
    client.zcard(keys.groupJobs),
    client.zcard(keys.groupBacklog),
    client.hgetall(keys.groupCounts),
  ]);
  let running = 0;
  for (const [field, value] of Object.entries(counts)) {
    // "<group>\0l" is a rate bucket; a paused group's count carries GROUP_PAUSED.
    if (!field.includes('\0')) running += Number(value) % GROUP_PAUSED;
  }
  return { waiting, running, groups };
}

/** What groups.lua adds to a paused group's running count (2^40). */
export const GROUP_PAUSED = 2 ** 40;
