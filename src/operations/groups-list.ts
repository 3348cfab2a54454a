/** The `groups-list` operation (groups-list.lua): a page of one partition's groups by backlog (issue 29). */
import type { RedisClient } from '../redis/connection.js';
import type { QueueKeys } from '../redis/keys.js';
import { runScript, script } from '../redis/scripts.js';
import { asArray, num, str } from './reply.js';

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
