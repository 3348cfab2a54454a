/** The `claim` operation: lease due jobs to a worker (claim-zpopmin.lua, claim-range.lua or claim-wheel.lua). */
import type { Strategy } from '../redis/capabilities.js';
import type { QueueKeys } from '../redis/keys.js';
import type { RedisClient } from '../redis/connection.js';
import { runScript, script } from '../redis/scripts.js';
import { parseMeta, type JobMeta } from './meta.js';
import { asArray, bytes, num, str } from './reply.js';
import { wheelTail, type Layout } from './wheel.js';

/** What a claim needs. */
export interface ClaimInput {
  strategy: Strategy;
  limit: number;
  leaseMs: number;
  workerId: string;
  deadMaxCount: number;
  deadMaxAgeMs: number;
  /** Rate limit shared by all workers of the queue; max 0 means none. */
  rate: { max: number; perMs: number };
  eventsCap: number;
  /** Strategy 'wheel' only: the wheel layout, and the starts of the buckets to promote when due (the last claim's `wheel.head`). */
  layout: Layout;
  buckets?: readonly number[];
}

/** A job leased to this worker. */
export interface ClaimedJob {
  id: string;
  token: string;
  envelope: Buffer;
  meta: JobMeta;
  runAt: number;
  /** Server time of the claim (the lease start). */
  claimedAt: number;
  /** Lease deadline, server time. */
  deadline: number;
}

/** The claimed jobs, the server's clock, and when the next job or lease expiry is due (-1: none). */
export interface ClaimOutput {
  now: number;
  nextAt: number;
  jobs: ClaimedJob[];
  /** True when the queue (this partition) is paused: nothing was taken, and nextAt is -1 (wait for the resume). */
  paused?: boolean;
  /**
   * Strategy 'wheel' only: jobs left in ready; whether due buckets were left for lack of their key
   * (claim again at once); the starts of the index's first buckets, to pass as `buckets` next time.
   */
  wheel?: { readyLeft: number; dueLeft: boolean; head: number[] };
}

const FIELDS_PER_JOB = 5;

/** Claim up to `input.limit` due jobs. */
export async function claim(client: RedisClient, keys: QueueKeys, input: ClaimInput): Promise<ClaimOutput> {
  const name =
    input.strategy === 'zpopmin'
      ? 'claim-zpopmin'
      : input.strategy === 'range'
        ? 'claim-range'
        : 'claim-wheel';
  let tail: { keys: string[]; args: number[] } = { keys: [], args: [] };
  if (input.strategy === 'wheel') {
    if (input.layout.kind !== 'wheel') throw new Error("claim: strategy 'wheel' needs the wheel layout");
    tail = wheelTail(keys, input.layout, input.buckets ?? []);
  }
  const reply = asArray(
    await runScript(
      client,
      script(name),
      [
        keys.schedule,
        keys.jobs,
        keys.meta,
        keys.active,
        keys.leases,
        keys.token,
        keys.dead,
        keys.errors,
        keys.limiter,
        keys.events,
        keys.paused,
        keys.progress,
        ...tail.keys,
      ],
      [
        input.limit,
        input.leaseMs,
        input.workerId,
        input.deadMaxCount,
        input.deadMaxAgeMs,
        input.rate.max,
        input.rate.perMs,
        input.eventsCap,
        ...tail.args,
      ],
    ),
    name,
  );
  const now = num(reply, 0, name);
  const count = num(reply, 2, name);
  const jobs: ClaimedJob[] = [];
  for (let i = 0; i < count; i++) {
    const at = 3 + i * FIELDS_PER_JOB;
    const id = str(reply, at, name);
    jobs.push({
      id,
      token: str(reply, at + 1, name),
      envelope: bytes(reply, at + 2, name),
      meta: parseMeta(str(reply, at + 3, name), id),
      runAt: num(reply, at + 4, name),
      claimedAt: now,
      deadline: now + input.leaseMs,
    });
  }
  // The paused flag is the reply's last element, after any strategy's own fields.
  const paused = num(reply, reply.length - 1, name) === 1;
  const out: ClaimOutput = { now, nextAt: num(reply, 1, name), jobs, paused };
  if (input.strategy === 'wheel') {
    const at = 3 + count * FIELDS_PER_JOB;
    const heads = num(reply, at + 2, name);
    out.wheel = {
      readyLeft: num(reply, at, name),
      dueLeft: num(reply, at + 1, name) === 1,
      head: Array.from({ length: heads }, (_, i) => num(reply, at + 3 + i, name)),
    };
  }
  return out;
}
