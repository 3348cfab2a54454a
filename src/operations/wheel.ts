/**
 * The layout of a queue's waiting jobs, as the operations need it: the waiting ZSETs (zpopmin and
 * range), or the wheel of bucket lists with each job's due time in `wc` (see
 * src/scripts/includes/wheel.lua and docs/PROTOCOL.md). Scripts cannot build bucket keys, so a
 * wheel call passes the buckets it expects and calls again with the ones a script names in
 * DELAYQ_WRONG_BUCKET. A script that finds another layout recorded than the caller's refuses with
 * DELAYQ_LAYOUT_MISMATCH (layoutRefusal).
 */
import type { ServerClock } from '../clock.js';
import { LayoutMismatchError, ValidationError } from '../errors.js';
import type { RedisClient } from '../redis/connection.js';
import { wheelBucketKey, type QueueKeys } from '../redis/keys.js';
import { ScriptLayoutMismatch, ScriptWrongBucket } from '../redis/script-errors.js';
import { runScript, script, type Reply, type ScriptArgs } from '../redis/scripts.js';

/** The wheel layout: bucket lists of `granularityMs`, and the estimate of the server clock to guess buckets with. */
export interface WheelLayout {
  readonly kind: 'wheel';
  readonly granularityMs: number;
  readonly clock: ServerClock;
}

/** Where a queue's waiting jobs live. */
export type Layout = { readonly kind: 'zset' } | WheelLayout;

/** The layout of the zpopmin and range strategies. */
export const ZSET_LAYOUT: Layout = { kind: 'zset' };

/** The wheel's default bucket width. */
export const DEFAULT_GRANULARITY_MS = 1_000;

/** The name stored in the queue's `layout` key: 'zset' or 'wheel:<granularity ms>'. */
export function layoutName(layout: Layout): string {
  return layout.kind === 'zset' ? 'zset' : `wheel:${layout.granularityMs}`;
}

/** Validate the `wheel` option; returns the granularity in ms. */
export function resolveGranularity(option: { granularityMs?: number } | undefined): number {
  const g = option?.granularityMs ?? DEFAULT_GRANULARITY_MS;
  if (!Number.isInteger(g) || g < 10 || g > 3_600_000) {
    throw new ValidationError(
      `wheel.granularityMs must be a whole number from 10 to 3600000, got ${String(g)}`,
      'wheel.granularityMs',
    );
  }
  return g;
}

/** The start of the bucket holding due time `due`. */
export function bucketStart(due: number, granularityMs: number): number {
  return due - (((due % granularityMs) + granularityMs) % granularityMs);
}

// How far the server clock estimate may be off, when guessing the bucket of "now + delay".
const GUESS_MARGIN_MS = 50;
const ATTEMPTS = 5;

/** The buckets a job due `delayMs` after the server's now probably falls in. */
export function guessDelay(layout: WheelLayout, delayMs: number): number[] {
  const due = layout.clock.now() + delayMs;
  const g = layout.granularityMs;
  return unique([bucketStart(due - GUESS_MARGIN_MS, g), bucketStart(due + GUESS_MARGIN_MS, g)]);
}

/** The bucket of a job due at `at` (epoch ms). */
export function guessAt(layout: WheelLayout, at: number): number[] {
  return [bucketStart(at, layout.granularityMs)];
}

function unique(values: number[]): number[] {
  return [...new Set(values)];
}

/**
 * The KEYS and ARGV a wheel-layout script call appends (see wheel.lua wheel_keys): ready, wheel,
 * wheel count and the bucket lists of `starts`; the granularity and those starts.
 */
export function wheelTail(
  keys: QueueKeys,
  layout: Layout,
  starts: readonly number[] = [],
): { keys: string[]; args: number[] } {
  if (layout.kind === 'zset') return { keys: [], args: [] };
  return {
    keys: [keys.ready, keys.wheel, keys.wheelCount, ...starts.map((s) => wheelBucketKey(keys, s))],
    args: [layout.granularityMs, ...starts],
  };
}

/**
 * Run `call` with the buckets `guess` expects; while the script names buckets it needs that were
 * not passed (nothing was written then), call again with those (and the next one: a delay counted
 * from a later now may fall one bucket further).
 */
export async function withBuckets<T>(
  layout: Layout,
  guess: readonly number[],
  call: (starts: number[]) => Promise<T>,
): Promise<T> {
  if (layout.kind === 'zset') return call([]);
  const starts = new Set(guess);
  for (let attempt = 1; ; attempt++) {
    try {
      return await call([...starts]);
    } catch (err) {
      if (!(err instanceof ScriptWrongBucket) || attempt >= ATTEMPTS) throw err;
      for (const s of err.starts) {
        starts.add(s);
        starts.add(s + layout.granularityMs);
      }
    }
  }
}

/**
 * Run script `name` with `head` KEYS and ARGV followed by the wheel tail (wheelTail) of the
 * buckets it needs: `guess` first, then any the script names (withBuckets). In the zset layout the
 * tail is empty and the script runs once.
 */
export function runWheelAware(
  client: RedisClient,
  name: string,
  keys: QueueKeys,
  layout: Layout,
  guess: readonly number[],
  head: { keys: readonly string[]; args: ScriptArgs },
): Promise<Reply> {
  return withBuckets(layout, guess, (starts) => {
    const tail = wheelTail(keys, layout, starts);
    const args = head.args;
    return runScript(
      client,
      script(name),
      [...head.keys, ...tail.keys],
      typeof args === 'function' ? () => [...args(), ...tail.args] : [...args, ...tail.args],
    );
  });
}

/**
 * A script's layout refusal (DELAYQ_LAYOUT_MISMATCH) as the LayoutMismatchError users see, naming
 * `queue` and the layout the caller used; any other error as it came.
 */
export function layoutRefusal(err: unknown, queue: string, wanted: Layout): unknown {
  return err instanceof ScriptLayoutMismatch
    ? new LayoutMismatchError(queue, err.stored, layoutName(wanted))
    : err;
}
