/**
 * The `search` operation (search.lua): one step of queue.search on one partition, walking one
 * source from a position within a budget. src/queue/search.ts chains the steps.
 */
import type { RedisClient } from '../redis/connection.js';
import type { QueueKeys } from '../redis/keys.js';
import { runScript, script } from '../redis/scripts.js';
import { rawJob, type RawJob } from './raw-job.js';
import { asArray, bytes, num, str } from './reply.js';

/**
 * A source of jobs search.lua walks: a waiting class (s, p, r, g; the wheel's w), the flow parents
 * waiting for their children (f), running (a), or a set of finished jobs (c, x, d: newest first).
 */
export type SearchSource = 's' | 'p' | 'r' | 'g' | 'w' | 'f' | 'a' | 'c' | 'x' | 'd';

/** The key of a source in one partition. */
export function sourceKey(keys: QueueKeys, source: SearchSource): string {
  switch (source) {
    case 's':
      return keys.waiting;
    case 'p':
      return keys.prioWaiting;
    case 'r':
      return keys.prioReady;
    case 'g':
      return keys.groupJobs;
    case 'w':
      return keys.wheelCount;
    case 'f':
      return keys.flowsWaiting;
    case 'a':
      return keys.leases;
    case 'c':
      return keys.completed;
    case 'x':
      return keys.cancelled;
    case 'd':
      return keys.dead;
  }
}

/** The state of the jobs of a source, as list.lua's rows say it. */
function stateOf(source: SearchSource): string {
  if (source === 'f') return 'waiting-children';
  if (source === 'a') return 'active';
  if (source === 'c') return 'completed';
  if (source === 'x') return 'cancelled';
  if (source === 'd') return 'dead';
  return 'waiting';
}

/**
 * Where a walk is: after the entry of `score` and `member` in the source's order (both '': the
 * start). For the wheel: the HSCAN cursor and the matches of its batch answered already.
 */
export interface SearchPosition {
  score: string;
  /** Bytes: a gq member holds its due time as 6 binary bytes. */
  member: Buffer;
}

/** The start of every source. */
export const SEARCH_START: SearchPosition = { score: '', member: Buffer.alloc(0) };

/** What one step looks for. */
export interface SearchStepInput {
  source: SearchSource;
  /** Epoch ms, inclusive. */
  from: number;
  to: number;
  /** '' for any id. */
  idPrefix: string;
  /** '' for any group. */
  group: string;
  position: SearchPosition;
  /** Most jobs answered, 1..1000. */
  limit: number;
  /** Most entries looked at, 1..100000. */
  budget: number;
}

/** A job found, with the key its source orders it by (partitions are merged by it). */
export interface SearchHit {
  key: SearchPosition;
  raw: RawJob;
}

/** What one step found, and where it got to. */
export interface SearchStepOutput {
  /** The source has nothing past `reach`. */
  done: boolean;
  /** The last entry looked at (or a point the walk jumped to): where the next step goes on. */
  reach: SearchPosition;
  /** Entries looked at. */
  examined: number;
  hits: SearchHit[];
}

/** Walk one source of one partition from `input.position`. */
export async function searchStep(
  client: RedisClient,
  keys: QueueKeys,
  input: SearchStepInput,
): Promise<SearchStepOutput> {
  const reply = asArray(
    await runScript(
      client,
      script('search'),
      [keys.records, keys.errors, keys.holders, keys.progress, sourceKey(keys, input.source)],
      [
        input.source,
        input.from,
        input.to,
        input.idPrefix,
        input.group,
        input.position.score,
        input.position.member,
        input.limit,
        input.budget,
      ],
    ),
    'search',
  );
  const state = stateOf(input.source);
  const hits: SearchHit[] = [];
  for (let i = 4; i + 8 < reply.length; i += 9) {
    hits.push({
      key: { score: str(reply, i, 'search'), member: bytes(reply, i + 1, 'search') },
      raw: rawJob(str(reply, i + 2, 'search'), state, reply, i + 3, 'search'),
    });
  }
  return {
    done: num(reply, 0, 'search') === 1,
    reach: { score: str(reply, 1, 'search'), member: bytes(reply, 2, 'search') },
    examined: num(reply, 3, 'search'),
    hits,
  };
}
