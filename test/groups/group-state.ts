/** What a queue's group keys hold (docs/ARCHITECTURE.md §3.1), read directly: the tests' view of gq gw gr gc. */
import type { Queue } from '../../src/index.js';
import { internals } from '../support/internals.js';

export interface GroupState {
  /** Waiting grouped jobs (gq), groups in gw and gr, and gc's running counts (bucket fields left out). */
  waiting: number;
  groupsWaiting: number;
  groupsReady: number;
  running: Record<string, number>;
  /** No grouped job waits and no group has a running count. */
  empty: boolean;
}

export async function groupState<T>(queue: Queue<T>): Promise<GroupState> {
  const states = await Promise.all(
    internals(queue).partitions.map(async (keys) => {
      const [waiting, gw, gr, counts] = await Promise.all([
        internals(queue).client.zcard(keys.groupJobs),
        internals(queue).client.zcard(keys.groupsWaiting),
        internals(queue).client.zcard(keys.groupsReady),
        internals(queue).client.hgetall(keys.groupCounts),
      ]);
      return { waiting, gw, gr, counts };
    }),
  );
  const running: Record<string, number> = {};
  for (const s of states) {
    for (const [field, value] of Object.entries(s.counts)) {
      // "<group>\0l" is a rate bucket, not a count; a paused group's count carries 2^40 (groups.lua).
      if (!field.includes('\0')) running[field] = (running[field] ?? 0) + (Number(value) % 2 ** 40);
    }
  }
  const waiting = states.reduce((n, s) => n + s.waiting, 0);
  const groupsWaiting = states.reduce((n, s) => n + s.gw, 0);
  const groupsReady = states.reduce((n, s) => n + s.gr, 0);
  return {
    waiting,
    groupsWaiting,
    groupsReady,
    running,
    empty: waiting === 0 && groupsWaiting === 0 && groupsReady === 0 && Object.keys(running).length === 0,
  };
}
