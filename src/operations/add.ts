/** The `add` operation: accept jobs into the schedule, or the wheel (add.lua). */
import { performance } from 'node:perf_hooks';
import { wholeMsSince } from '../clock.js';
import { MAX_RUN_AT } from '../due-bounds.js';
import type { QueueKeys } from '../redis/keys.js';
import type { RedisClient } from '../redis/connection.js';
import { runScript, runScriptAndWait, script, type Reply, type ReplicaWait } from '../redis/scripts.js';
import type { JobMeta } from './meta.js';
import { asArray, num } from './reply.js';
import { guessAt, guessDelay, wheelTail, withBuckets, type Layout } from './wheel.js';

/**
 * When a job is due: `delay` ms after the add() call (the server's now at the script, less the
 * time from the call to the send: see remainingDelay), or at an absolute epoch ms.
 */
export type When = { delay: number } | { at: number };

/** One job ready to be written. */
export interface AddInput {
  id: string;
  when: When;
  envelope: Buffer;
  meta: Pick<JobMeta, 'm' | 'b' | 'o'>;
  /** Replace a waiting job of this id (add.lua mode 'r') instead of keeping it. */
  replace?: boolean;
}

/** The state of an existing job a replace left alone. */
export type ExistingState = 'active' | 'dead' | 'completed';

/**
 * Per job: whether it was written, and its due time (the existing job's when it was not); for an
 * id whose job completed recently (so nothing was written), when it completed.
 */
export interface AddOutput {
  created: boolean;
  runAt: number;
  completedAt?: number;
  /** Replace mode: the waiting job was replaced (runAt is its new due time). */
  replaced?: boolean;
  /** Replace mode: the job exists but was not waiting, so nothing was written. */
  state?: ExistingState;
}

/**
 * Write `jobs` in one atomic script call, into the queue's `layout`. `calledAt` is the
 * performance.now() of the add() call that the delays count from (DESIGN invariant 7); by default
 * the delays count from this call.
 */
export async function add(
  client: RedisClient,
  keys: QueueKeys,
  jobs: readonly AddInput[],
  eventsCap: number,
  layout: Layout,
  calledAt: number = performance.now(),
): Promise<AddOutput[]> {
  // Not runWheelAware: the replace keys come after the wheel's tail.
  const reply = await withBuckets(layout, guessBuckets(jobs, layout, calledAt), (starts) => {
    const tail = wheelTail(keys, layout, starts);
    return runScript(
      client,
      script('add'),
      [...addKeys(keys), ...tail.keys, ...replaceKeys(keys, jobs)],
      () => [...addArgs(jobs, eventsCap, calledAt), ...tail.args],
    );
  });
  return parseAddReply(reply, jobs, layout);
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
): Promise<{ outputs: AddOutput[]; replicated: number; waitError: Error | null }> {
  const guess = guessBuckets(jobs, layout, calledAt);
  const { reply, replicated, waitError } = await withBuckets(layout, guess, (starts) => {
    const tail = wheelTail(keys, layout, starts);
    return runScriptAndWait(
      client,
      script('add'),
      [...addKeys(keys), ...tail.keys, ...replaceKeys(keys, jobs)],
      () => [...addArgs(jobs, eventsCap, calledAt), ...tail.args],
      wait,
    );
  });
  return { outputs: parseAddReply(reply, jobs, layout), replicated, waitError };
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

function addKeys(keys: QueueKeys): string[] {
  return [keys.schedule, keys.jobs, keys.meta, keys.wake, keys.events, keys.done];
}

/** add.lua takes these after the others only when a job may be replaced: to tell its state. */
function replaceKeys(keys: QueueKeys, jobs: readonly AddInput[]): string[] {
  return jobs.some((job) => job.replace) ? [keys.active, keys.dead, keys.completed] : [];
}

/** ARGV for add.lua, built just before the command is written (so the delays left are current). */
function addArgs(
  jobs: readonly AddInput[],
  eventsCap: number,
  calledAt: number,
): Array<string | number | Buffer> {
  const args: Array<string | number | Buffer> = [jobs.length];
  // One reading for the batch: the command is written right after this returns.
  const elapsed = wholeMsSince(calledAt);
  for (const job of jobs) {
    const [kind, value] =
      'delay' in job.when ? ['d', delayLeft(job.when.delay, elapsed)] : ['a', job.when.at];
    args.push(
      job.id,
      job.replace ? `${kind}r` : kind,
      value,
      job.envelope,
      JSON.stringify({ a: 0, ...job.meta }),
    );
  }
  args.push(eventsCap);
  return args;
}

/** add.lua's codes of a job a replace left alone (the time is its lease deadline, death, completion). */
const EXISTING: Partial<Record<number, ExistingState>> = { 4: 'active', 5: 'dead', 6: 'completed' };

function parseAddReply(raw: Reply, jobs: readonly AddInput[], layout: Layout): AddOutput[] {
  const reply = asArray(raw, 'add');
  // The wheel layout's reply ends with the server's now: the clock bucket guesses start from.
  if (layout.kind === 'wheel') layout.clock.observe(num(reply, 2 * jobs.length, 'add'));
  return jobs.map((_, i): AddOutput => {
    const created = num(reply, 2 * i, 'add');
    const at = num(reply, 2 * i + 1, 'add');
    // 2: the id belongs to a job that has already run and completed; `at` is when.
    const flag = jobs[i]!.replace ? { replaced: false } : {};
    if (created === 2) return { created: false, runAt: at, completedAt: at, ...flag };
    if (created === 3) return { created: false, replaced: true, runAt: at };
    const state = EXISTING[created];
    if (state !== undefined) {
      return {
        created: false,
        replaced: false,
        state,
        runAt: at,
        ...(state === 'completed' && { completedAt: at }),
      };
    }
    return { created: created === 1, runAt: at, ...flag };
  });
}
