/**
 * The `claim` operation (claim.lua): ack the jobs a worker finished and lease it due jobs, in one
 * call. Every strategy runs the same script; `ackOnly` is a claim of none.
 */
import { idOfLease, tokenOfLease } from '../members/lease.js';
import { decodeRecord, type RecordHeader } from '../record/index.js';
import type { Strategy } from '../redis/capabilities.js';
import type { QueueKeys } from '../redis/keys.js';
import type { RedisClient } from '../redis/connection.js';
import { AckArgs, type AckItem } from './ack-args.js';
import { asArray, bytes, num, str } from './reply.js';
import { RespRun } from '../redis/prepared-command.js';
import { FixedKeys, runScript, script } from '../redis/scripts.js';
import { runWheelAware, type Layout } from './wheel.js';

export type { AckItem } from './ack-args.js';

/** Per ack: applied, already applied (a resent ack), or refused because the lease was lost. */
export type AckOutcome =
  | { status: 'ok' }
  | { status: 'already' }
  /** detail: 'cancelled', 'expired' or 'not held'. */
  | { status: 'lost'; detail: string };

/** What a claim needs. */
export interface ClaimInput {
  strategy: Strategy;
  /** Jobs to lease; 0 acks only. */
  limit: number;
  leaseMs: number;
  /** This worker's holder number (worker-register), written into each claim block. */
  holder: number;
  deadMaxCount: number;
  deadMaxAgeMs: number;
  /** Rate limit shared by all workers of the queue; max 0 means none. */
  rate: { max: number; perMs: number };
  /**
   * Groups (issue 16): at most `concurrency` running jobs per group across all workers (default
   * 1), and with `limit` at most `max` starts per `perMs` per group on average (token bucket).
   */
  groups?: { concurrency: number; limit?: { max: number; perMs: number } };
  eventsCap: number;
  /** The server has ZMSCORE (capabilities probe). */
  zmscore: boolean;
  /** Where waiting jobs live; with the wheel, `buckets` are the bucket lists to pass first. */
  layout: Layout;
  buckets?: readonly number[];
  /** Finished jobs to ack first, in the same call. */
  acks?: readonly AckItem[];
  /**
   * Claim ahead: also lease jobs due up to this many ms after the server's now (0 or absent: only
   * due jobs). The caller must not start such a job before its due time by the server clock
   * (StartGate); the wheel ignores it.
   */
  aheadMs?: number;
}

/**
 * A claim reply's TIME in µs and when the reply arrived (performance.now()): together a lower
 * bound of the server's clock from then on (start-gate.ts). One per reply, shared by its jobs.
 */
export interface ReplyClock {
  readonly serverUs: number;
  readonly arrivedAt: number;
}

/** A job leased to this worker. */
export interface ClaimedJob {
  id: string;
  /** The lease member: the handle every later call on this job passes. */
  member: string;
  /** "<claims>.<claimed at>". */
  token: string;
  /** The member's bytes as the reply carried them (a view, no copy): its ack writes them as they are. */
  memberBytes?: Buffer | undefined;
  /** The record's header after this claim (attempt, max attempts, backoff, timeout, version, ...). */
  header: RecordHeader;
  /** The payload bytes: a view into the reply's record buffer, no copy. */
  payload: Buffer;
  runAt: number;
  /** Server time of the claim (the lease start). */
  claimedAt: number;
  /** Lease deadline, server time. */
  deadline: number;
  /** The reply that leased it: to start a job claimed ahead at its due time, not before. */
  reply?: ReplyClock;
}

/** A taken job whose record could not be read: leased, so the caller buries it (fail, unrecoverable). */
export interface UnreadableJob {
  id: string;
  member: string;
  error: Error;
}

/** The acks' outcomes, the claimed jobs, the server's clock, and when to claim again (-1: unknown). */
export interface ClaimOutput {
  now: number;
  /** The script's TIME in µs (`now` is it rounded down to the ms); absent where outputs were merged. */
  nowUs?: number;
  nextAt: number;
  acks: AckOutcome[];
  jobs: ClaimedJob[];
  /** Records the script leased but this code cannot decode (a newer format written since). */
  unreadable: UnreadableJob[];
  /** The queue (this partition) is paused: nothing was taken, and nextAt is -1 (wait for the resume). */
  paused: boolean;
  /** Strategy 'wheel' only: what the wheel source needs for its next call (see WheelState). */
  wheel?: WheelState;
}

/** The wheel's fields of a claim reply (wheel.lua wheel_reply). */
export interface WheelState {
  /** Jobs left in the ready list (the rate limit or a full batch left them). */
  readyLeft: number;
  /** Due buckets were left because this call did not pass them: claim again at once, with `head`. */
  dueLeft: boolean;
  /** The starts of the wheel index's first buckets: the bucket lists to pass next time. */
  head: number[];
}

/** Per leased job in a claim reply: lease member, record, due (claim.lua). */
const FIELDS_PER_JOB = 3;

/** The KEYS of claim.lua before the wheel's tail (docs/ARCHITECTURE.md §4.11, then pg, gn, f and fw). */
export function claimKeys(keys: QueueKeys): string[] {
  return [
    keys.waiting,
    keys.prioWaiting,
    keys.prioReady,
    keys.groupJobs,
    keys.groupsWaiting,
    keys.groupsReady,
    keys.groupCounts,
    keys.records,
    keys.leases,
    keys.completed,
    keys.cancelled,
    keys.errors,
    keys.dead,
    keys.paused,
    keys.limiter,
    keys.events,
    keys.wake,
    keys.counters,
    keys.progress,
    keys.groupBacklog,
    keys.flows,
    keys.flowsWaiting,
  ];
}

/** A queue whose workers set no group options: one running job per group. */
export const DEFAULT_GROUP_CONCURRENCY = 1;

/**
 * What every claim of one worker in one partition sends besides the limit, the holder, the acks
 * and the buckets: its KEYS and the ARGV of its settings, built once rather than at every call
 * (a worker at concurrency 1 makes one call per job).
 */
export interface PreparedClaim {
  readonly keys: QueueKeys;
  readonly strategy: Strategy;
  readonly layout: Layout;
  readonly leaseMs: number;
  /** claimKeys(keys), with their command heads encoded once (the zset layout's calls). */
  readonly keyList: FixedKeys;
  /** ARGV 4 to 12, from the group concurrency to the events cap, encoded once. */
  readonly settingsArgs: RespRun;
}

/** The fixed parts of `keys`' claims with `settings`. */
export function prepareClaim(
  keys: QueueKeys,
  settings: Omit<ClaimInput, 'limit' | 'acks' | 'buckets' | 'holder'>,
): PreparedClaim {
  const ahead = settings.aheadMs ? `a${settings.aheadMs}` : '';
  const flags = `${settings.strategy === 'zpopmin' ? 'z' : ''}${settings.zmscore ? 'm' : ''}${ahead}`;
  return {
    keys,
    strategy: settings.strategy,
    layout: settings.layout,
    leaseMs: settings.leaseMs,
    keyList: new FixedKeys(claimKeys(keys)),
    settingsArgs: new RespRun([
      settings.groups?.concurrency ?? DEFAULT_GROUP_CONCURRENCY,
      settings.groups?.limit?.max ?? 0,
      settings.groups?.limit?.perMs ?? 0,
      settings.rate.max,
      settings.rate.perMs,
      settings.deadMaxCount,
      settings.deadMaxAgeMs,
      flags,
      settings.eventsCap,
    ]),
  };
}

/** Ack `input.acks`, then claim up to `input.limit` due jobs. */
export async function claim(client: RedisClient, keys: QueueKeys, input: ClaimInput): Promise<ClaimOutput> {
  return claimPrepared(
    client,
    prepareClaim(keys, input),
    input.limit,
    input.holder,
    input.acks,
    input.buckets,
  );
}

// Outcomes carry no per-ack data but a lost one's detail: shared, never changed.
const ACK_OK: AckOutcome = Object.freeze({ status: 'ok' });
const ACK_ALREADY: AckOutcome = Object.freeze({ status: 'already' });
const NO_ACKS: readonly AckItem[] = [];

/** claim() with its fixed parts prepared (prepareClaim). */
export async function claimPrepared(
  client: RedisClient,
  prepared: PreparedClaim,
  limit: number,
  holder: number,
  acks: readonly AckItem[] = NO_ACKS,
  buckets: readonly number[] = [],
): Promise<ClaimOutput> {
  const { layout, leaseMs, settingsArgs } = prepared;
  // The acks, four ARGV each, are written straight into the command (ack-args.ts).
  const args: Array<number | RespRun | AckArgs> = [limit, leaseMs, holder, settingsArgs, acks.length];
  if (acks.length > 0) args.push(new AckArgs(acks));
  if (prepared.strategy === 'wheel' && layout.kind !== 'wheel') {
    throw new Error("claim: strategy 'wheel' needs the wheel layout");
  }
  const reply = asArray(
    layout.kind === 'zset'
      ? // The zset layout has no wheel tail and never a bucket to retry with: one plain call.
        await runScript(client, script('claim'), prepared.keyList, args)
      : await runWheelAware(client, 'claim', prepared.keys, layout, buckets, {
          keys: prepared.keyList.list,
          args,
        }),
    'claim',
  );
  // Taken before the reply is parsed: a later arrival would only make the bound lower.
  const arrivedAt = performance.now();
  const now = num(reply, 0, 'claim');
  const nowUs = num(reply, reply.length - 1, 'claim');
  const replyClock: ReplyClock = { serverUs: nowUs, arrivedAt };
  const outcomes = ackOutcomes(bytes(reply, 3, 'claim'), acks.length);
  const countAt = 4;
  const count = num(reply, countAt, 'claim');
  const jobs: ClaimedJob[] = [];
  const unreadable: UnreadableJob[] = [];
  const deadline = now + leaseMs;
  for (let i = 0; i < count; i++) {
    const at = countAt + 1 + i * FIELDS_PER_JOB;
    const member = str(reply, at, 'claim');
    const raw = reply[at];
    // The token is in the member (src/members/lease.ts): the reply does not carry it again.
    const token = tokenOfLease(member);
    const id = idOfLease(member);
    const record = bytes(reply, at + 1, 'claim');
    try {
      const { header, payload } = decodeRecord(record);
      jobs.push({
        id,
        member,
        token,
        memberBytes: Buffer.isBuffer(raw) ? raw : undefined,
        header,
        payload,
        runAt: num(reply, at + 2, 'claim'),
        claimedAt: now,
        deadline,
        reply: replyClock,
      });
    } catch (error) {
      unreadable.push({ id, member, error: error as Error });
    }
  }
  const out: ClaimOutput = {
    now,
    nowUs,
    nextAt: num(reply, 1, 'claim'),
    acks: outcomes,
    jobs,
    unreadable,
    paused: num(reply, 2, 'claim') === 1,
  };
  if (layout.kind === 'wheel') {
    const at = countAt + 1 + count * FIELDS_PER_JOB;
    const heads = num(reply, at + 2, 'claim');
    out.wheel = {
      readyLeft: num(reply, at, 'claim'),
      dueLeft: num(reply, at + 1, 'claim') === 1,
      head: Array.from({ length: heads }, (_, i) => num(reply, at + 3 + i, 'claim')),
    };
  }
  return out;
}

/** What each letter of a claim reply's ack outcomes means (claim.lua). */
const ACK_LETTERS: Readonly<Record<string, AckOutcome>> = Object.freeze({
  O: ACK_OK,
  A: ACK_ALREADY,
  C: Object.freeze({ status: 'lost', detail: 'cancelled' }),
  E: Object.freeze({ status: 'lost', detail: 'expired' }),
  N: Object.freeze({ status: 'lost', detail: 'not held' }),
});

/** The outcome a letter of a claim reply's ack outcomes stands for; undefined for no known letter. */
export function ackOutcomeOf(letter: string): AckOutcome | undefined {
  return ACK_LETTERS[letter];
}

/** The outcomes of a call's `count` acks, from the reply's string of a letter per ack. */
function ackOutcomes(letters: Buffer, count: number): AckOutcome[] {
  if (letters.length !== count) {
    throw new Error(`claim: ${count} acks sent, ${letters.length} outcomes in the reply`);
  }
  const outcomes = new Array<AckOutcome>(count);
  for (let i = 0; i < count; i++) {
    const letter = String.fromCharCode(letters[i]!);
    const outcome = ackOutcomeOf(letter);
    if (!outcome) throw new Error(`claim: unknown ack outcome '${letter}'`);
    outcomes[i] = outcome;
  }
  return outcomes;
}
