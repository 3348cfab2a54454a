/** The `add` operation: accept jobs into the schedule, or the wheel (add.lua). */
import { performance } from 'node:perf_hooks';
import { wholeMsSince } from '../clock.js';
import { MAX_RUN_AT } from '../due-bounds.js';
import type { ServerTimeBound } from '../server-time-bound.js';
import type { QueueKeys } from '../redis/keys.js';
import type { RedisClient } from '../redis/connection.js';
import { runScript, runScriptAndWait, script, type Reply, type ReplicaWait } from '../redis/scripts.js';
import { packAddJobs, recordBuffer, type RecordBytes } from './add-pack.js';
import { asArray, num, str } from './reply.js';
import { UNKNOWN_GROUP_CONCURRENCY } from './waiting-keys.js';
import { guessAt, guessDelay, wheelTail, withBuckets, type Layout } from './wheel.js';

/**
 * When a job is due: `delay` ms after the add() call (the server's now at the script, less the
 * time from the call to the send, which add.lua is told as `elapsed`), or at an absolute epoch ms.
 */
export type When = { delay: number } | { at: number };

/**
 * What an add does with an id that exists: `keep` it (nothing written; the default), `replace` it
 * when it is waiting (issue 15), or `new`: the id was generated, so an existing one is a collision
 * answered `taken` (nothing written), and the caller adds the job again under a new id.
 */
export type AddMode = 'keep' | 'replace' | 'new';

/** One job ready to be written. */
export interface AddInput {
  id: string;
  when: When;
  /** The record: header and payload bytes (src/record/), or the header's and the payload's text. */
  record: RecordBytes;
  /** The header's priority, repeated as the job's class (0: the default class). */
  priority: number;
  /** The header's group, repeated as the job's class (issue 16). */
  group?: string;
  mode: AddMode;
}

/** The state of an existing job an add left alone. */
export type ExistingState = 'active' | 'dead' | 'completed' | 'cancelled';

/**
 * Per job: whether it was written, and its due time (the existing job's when it was not, -1 when
 * unknown); for an id whose job ended, when it ended.
 */
export interface AddOutput {
  created: boolean;
  runAt: number;
  /** The job of this id completed at this time (nothing was written). */
  completedAt?: number;
  /** Replace mode: the waiting job was replaced (runAt is its new due time). */
  replaced?: boolean;
  /** The job exists but is not waiting, so nothing was written; runAt is when it got there. */
  state?: ExistingState;
  /** Mode `new`: the generated id is taken by another job; nothing was written. */
  taken?: boolean;
}

/**
 * Write `jobs` in one atomic script call, into the queue's `layout`. `calledAt` is the
 * performance.now() of the add() call that the delays count from (docs/DESIGN.md invariant 7); by default
 * the delays count from this call. `packed` is packAddJobs(jobs), when the caller has it already.
 */
export async function add(
  client: RedisClient,
  keys: QueueKeys,
  jobs: readonly AddInput[],
  eventsCap: number,
  layout: Layout,
  calledAt: number = performance.now(),
  groupConcurrency: number = UNKNOWN_GROUP_CONCURRENCY,
  serverTime?: ServerTimeBound,
  packed: Buffer | undefined = packAddJobs(jobs),
): Promise<AddOutput[]> {
  const send = new AddSend(calledAt, serverTime);
  const reply = await withBuckets(layout, guessBuckets(jobs, layout, calledAt), (starts) => {
    const tail = wheelTail(keys, layout, starts);
    return runScript(client, script('add'), [...addKeys(keys), ...tail.keys], () => [
      ...addArgs(jobs, packed, eventsCap, send.elapsedArg(), groupConcurrency),
      ...tail.args,
    ]);
  });
  return parseAddReply(reply, jobs, layout, send, packed !== undefined);
}

/**
 * Write `jobs` like add, then wait (WAIT, on the same connection) until `wait.replicas` replicas
 * hold them or `wait.timeoutMs` passes; resolves with how many did. Deciding whether that is enough
 * is the caller's.
 */
export async function addReplicated(
  client: RedisClient,
  keys: QueueKeys,
  jobs: readonly AddInput[],
  eventsCap: number,
  wait: ReplicaWait,
  layout: Layout,
  calledAt: number = performance.now(),
  groupConcurrency: number = UNKNOWN_GROUP_CONCURRENCY,
  serverTime?: ServerTimeBound,
  packed: Buffer | undefined = packAddJobs(jobs),
): Promise<{ outputs: AddOutput[]; replicated: number; waitError: Error | null }> {
  const send = new AddSend(calledAt, serverTime);
  const guess = guessBuckets(jobs, layout, calledAt);
  const { reply, replicated, waitError } = await withBuckets(layout, guess, (starts) => {
    const tail = wheelTail(keys, layout, starts);
    return runScriptAndWait(
      client,
      script('add'),
      [...addKeys(keys), ...tail.keys],
      () => [...addArgs(jobs, packed, eventsCap, send.elapsedArg(), groupConcurrency), ...tail.args],
      wait,
    );
  });
  return {
    outputs: parseAddReply(reply, jobs, layout, send, packed !== undefined),
    replicated,
    waitError,
  };
}

/**
 * What is left of `delay` now, counted from the add() call at `calledAt` (performance.now()): the
 * script adds it to its own TIME, which is read after the send, so the job is due no earlier than
 * call + delay, and no longer late by the time the call spent before the send (connect, probe,
 * config record, script load, encoding). Never below 0.
 */
export function remainingDelay(delay: number, calledAt: number): number {
  return delayLeft(delay, wholeMsSince(calledAt));
}

/**
 * `delay` less `elapsed`, never below 0. A delay past the latest due time the script accepts is
 * refused whatever the server's now, so it goes as given: the refusal then names the caller's
 * figure, and a delay past 2^53 is not rounded by the subtraction.
 */
function delayLeft(delay: number, elapsed: number): number {
  return delay > MAX_RUN_AT ? delay : Math.max(0, delay - elapsed);
}

function guessBuckets(jobs: readonly AddInput[], layout: Layout, calledAt: number): number[] {
  if (layout.kind === 'zset') return [];
  const starts = new Set<number>();
  for (const job of jobs) {
    const guess =
      'delay' in job.when
        ? guessDelay(layout, remainingDelay(job.when.delay, calledAt))
        : guessAt(layout, job.when.at);
    for (const s of guess) starts.add(s);
  }
  return [...starts];
}

/** add.lua's KEYS before the wheel's tail (docs/ARCHITECTURE.md §4.11, then `a`, `gn` and `lg`). */
export function addKeys(keys: QueueKeys): string[] {
  return [
    keys.waiting,
    keys.prioWaiting,
    keys.prioReady,
    keys.groupJobs,
    keys.groupsWaiting,
    keys.groupsReady,
    keys.groupCounts,
    keys.records,
    keys.completed,
    keys.cancelled,
    keys.dead,
    keys.wake,
    keys.counters,
    keys.events,
    keys.leases,
    keys.groupBacklog,
    keys.logs,
  ];
}

const MODE_LETTER: Record<AddMode, string> = { keep: 'k', replace: 'r', new: 'n' };

/**
 * One add script call's clock: where its delays count from, when its ARGV was built (just before
 * the command is written), and what its reply's TIME teaches about the server's clock.
 */
class AddSend {
  private sentAt = 0;

  constructor(
    private readonly calledAt: number,
    private readonly serverTime: ServerTimeBound | undefined,
  ) {}

  /**
   * add.lua's `elapsed`: the whole ms from the add() call to now, and, when the server's clock is
   * known from earlier replies, `:` and the most it read at the call. The script counts each
   * delay from the earlier of its TIME less the elapsed ms and that bound.
   */
  elapsedArg(): string | number {
    this.sentAt = performance.now();
    const elapsed = wholeMsSince(this.calledAt);
    const bound = this.serverTime?.atMost(this.calledAt);
    return bound === undefined ? elapsed : `${elapsed}:${bound}`;
  }

  /** The reply came back with the script's TIME in epoch µs. */
  replied(serverUs: number): void {
    this.serverTime?.observe(this.sentAt, serverUs, performance.now());
  }
}

/**
 * ARGV for add.lua, built just before the command is written (`elapsed`: AddSend.elapsedArg): the
 * packed form when `packed` (packAddJobs) is given, else five values per job.
 */
function addArgs(
  jobs: readonly AddInput[],
  packed: Buffer | undefined,
  eventsCap: number,
  elapsed: string | number,
  groupConcurrency: number,
): Array<string | number | Buffer> {
  if (packed) return [`P${jobs.length}`, elapsed, eventsCap, groupConcurrency, packed];
  const args: Array<string | number | Buffer> = [jobs.length, elapsed, eventsCap, groupConcurrency];
  for (const job of jobs) {
    const [kind, value] = 'delay' in job.when ? ['d', job.when.delay] : ['a', job.when.at];
    args.push(
      job.id,
      kind + MODE_LETTER[job.mode],
      value,
      recordBuffer(job.record),
      job.group !== undefined ? `g${job.group}` : job.priority === 0 ? '' : `p${job.priority}`,
    );
  }
  return args;
}

/** add.lua's codes of an existing job left alone, and the state each means. */
const EXISTING: Partial<Record<string, ExistingState>> = {
  A: 'active',
  D: 'dead',
  C: 'completed',
  X: 'cancelled',
};

/**
 * add.lua's reply: per job a code and a time, then the script's TIME; in the packed form
 * (`packed`) the codes come first as one string of letters, then the times.
 */
function parseAddReply(
  raw: Reply,
  jobs: readonly AddInput[],
  layout: Layout,
  send: AddSend,
  packed: boolean,
): AddOutput[] {
  const reply = asArray(raw, 'add');
  const n = jobs.length;
  // The reply ends with the script's TIME in µs: the bound of the server's clock the next add
  // counts from, and for the wheel the clock its bucket guesses start from.
  const serverUs = num(reply, packed ? n + 1 : 2 * n, 'add');
  send.replied(serverUs);
  if (layout.kind === 'wheel') layout.clock.observe(Math.floor(serverUs / 1000));
  const codes = packed ? str(reply, 0, 'add') : '';
  if (packed && codes.length !== n) throw new Error(`add: ${codes.length} reply codes for ${n} jobs`);
  return jobs.map((job, i): AddOutput => {
    const code = packed ? codes[i]! : str(reply, 2 * i, 'add');
    const at = num(reply, packed ? i + 1 : 2 * i + 1, 'add');
    // A created job (nearly every one of a bulk add): no object spread in.
    if (code === 'c')
      return job.mode === 'replace'
        ? { created: true, runAt: at, replaced: false }
        : { created: true, runAt: at };
    const flag = job.mode === 'replace' ? { replaced: false } : {};
    if (code === 'R') return { created: false, replaced: true, runAt: at };
    if (code === 'T') return { created: false, taken: true, runAt: at };
    const state = EXISTING[code];
    if (state !== undefined) {
      return {
        created: false,
        state,
        runAt: at,
        ...flag,
        ...(state === 'completed' && { completedAt: at }),
      };
    }
    if (code === 'k') return { created: false, runAt: at, ...flag };
    throw new Error(`add: unknown reply code ${JSON.stringify(code)} for job ${job.id}`);
  });
}
