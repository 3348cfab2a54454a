/**
 * The queue's counters (stats.lua, docs/ARCHITECTURE.md §7): monotonic totals in the `n` HASH,
 * bumped by the scripts of rare paths (add, fail, reap, cancel) and by each worker's
 * once-a-second flush (claimed, completed, lateness), plus a ring of per-second snapshots of
 * every total. Readers in any process see the same numbers: /metrics reads the totals, the
 * dashboard's charts take differences of consecutive snapshots.
 */
import type { QueueKeys } from '../redis/keys.js';
import type { RedisClient } from '../redis/connection.js';
import { runScript, script } from '../redis/scripts.js';

/** Upper bounds (ms) of the lateness histogram's finite buckets; `lat:+Inf` counts every observation. */
export const LATENESS_BOUNDS_MS = [1, 2, 5, 10, 20, 50, 100, 250, 500, 1000, 5000] as const;

/**
 * Every counter, in the order of a ring snapshot's fields. stats.lua repeats this list (Lua cannot
 * import it); test/metrics/counters.test.ts checks that a snapshot decodes to the totals.
 */
export const COUNTER_NAMES = [
  'added',
  'claimed',
  'completed',
  'failed',
  'retried',
  'dead',
  'cancelled',
  'reaped',
  ...LATENESS_BOUNDS_MS.map((le) => `lat:${le}` as const),
  'lat:+Inf',
  'lat:sum',
  // Added after the lateness fields: a snapshot of the earlier list is skipped (decodeSnapshot),
  // never read with its fields shifted.
  'snoozed',
] as const;

/** Upper bounds (ms) of the run-time histogram's finite buckets; `run:+Inf` counts every attempt timed. */
export const RUN_TIME_BOUNDS_MS = [
  1, 5, 10, 50, 100, 250, 500, 1000, 2500, 5000, 10_000, 30_000, 60_000, 300_000,
] as const;

/**
 * The run-time histogram's counters (cumulative buckets `run:<le>`, `run:+Inf`, `run:sum` in ms),
 * bumped by each worker's once-a-second flush like the lateness ones. Totals only: they are not
 * in the per-second snapshots (no chart reads them), so the ring's slots keep their size.
 * stats.lua repeats this list too.
 */
export const RUN_TIME_NAMES = [
  ...RUN_TIME_BOUNDS_MS.map((le) => `run:${le}` as const),
  'run:+Inf',
  'run:sum',
] as const;

/** Every total the counters hash holds: the snapshotted counters, then the run-time ones. */
export const TOTAL_NAMES = [...COUNTER_NAMES, ...RUN_TIME_NAMES] as const;

/**
 * A counter's name: a total (`added`, ...), a cumulative lateness bucket `lat:<le>`, `lat:sum`
 * (ms), or the run-time histogram's `run:<le>`, `run:+Inf`, `run:sum` (ms).
 */
export type CounterName = (typeof TOTAL_NAMES)[number];

/** Every counter's value; a counter never bumped is 0. */
export type CounterValues = Record<CounterName, number>;

/** How many seconds the ring keeps: the slots are `s:<second mod RING_SECONDS>`. */
export const RING_SECONDS = 600;

const SNAPSHOT_BYTES = 6 + 4 * COUNTER_NAMES.length;

/** All counters at zero. */
export function zeroCounters(): CounterValues {
  return Object.fromEntries(TOTAL_NAMES.map((name) => [name, 0])) as CounterValues;
}

/**
 * Add `deltas` to the totals of one partition and snapshot them in the current second's slot.
 * Returns that second (epoch s, server clock).
 */
export async function flushCounts(
  client: RedisClient,
  keys: QueueKeys,
  deltas: Partial<Record<CounterName, number>>,
): Promise<number> {
  const args: Array<string | number> = [];
  for (const [name, delta] of Object.entries(deltas)) {
    if (delta !== undefined && delta > 0) args.push(name, delta);
  }
  const reply = await runScript(client, script('stats'), [keys.counters], args);
  return Number(reply);
}

/** The totals of one partition. */
export async function readTotals(client: RedisClient, keys: QueueKeys): Promise<CounterValues> {
  const values = await client.hmget(keys.counters, ...TOTAL_NAMES);
  const out = zeroCounters();
  TOTAL_NAMES.forEach((name, i) => {
    out[name] = Number(values[i] ?? 0);
  });
  return out;
}

/** One ring slot: the totals (each mod 2^32) at the end of `second`; the run-time ones read 0. */
export interface CounterSnapshot {
  /** Epoch seconds, server clock. */
  second: number;
  values: CounterValues;
}

/**
 * The snapshots of one partition for the seconds `from` to `to` (inclusive, at most RING_SECONDS
 * of them), oldest first. Seconds with no flush have no snapshot; a slot still holding an older
 * second's snapshot (the ring wrapped) is left out.
 */
export async function readSnapshots(
  client: RedisClient,
  keys: QueueKeys,
  from: number,
  to: number,
): Promise<CounterSnapshot[]> {
  const first = Math.max(from, to - RING_SECONDS + 1);
  const seconds: number[] = [];
  for (let s = first; s <= to; s++) seconds.push(s);
  if (seconds.length === 0) return [];
  const slots = await client.hmgetBuffer(keys.counters, ...seconds.map((s) => `s:${s % RING_SECONDS}`));
  const out: CounterSnapshot[] = [];
  slots.forEach((slot, i) => {
    if (!slot) return;
    const snapshot = decodeSnapshot(slot);
    if (snapshot && snapshot.second === seconds[i]) out.push(snapshot);
  });
  return out;
}

/** A ring slot's bytes decoded; null when its length is not a snapshot's (written by another version). */
export function decodeSnapshot(bytes: Buffer): CounterSnapshot | null {
  if (bytes.length !== SNAPSHOT_BYTES) return null;
  const values = zeroCounters();
  COUNTER_NAMES.forEach((name, i) => {
    values[name] = bytes.readUInt32BE(6 + 4 * i);
  });
  return { second: bytes.readUIntBE(0, 6), values };
}
