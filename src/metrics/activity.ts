/**
 * Per-second activity of a queue for the dashboard's throughput and lateness charts, taken from the
 * ring of counter snapshots in Redis (stats.lua): the same picture from any process, whether or not
 * a worker runs in it. A second's activity is the difference between its snapshot and the one
 * before it in the same partition; seconds without a snapshot show nothing, and what happened in
 * them shows in the next second that has one.
 */
import {
  COUNTER_NAMES,
  LATENESS_BOUNDS_MS,
  zeroCounters,
  type CounterSnapshot,
  type CounterValues,
} from '../operations/stats.js';

/** One second of one queue's activity. */
export interface ActivitySecond {
  /** Start of the second, epoch ms (server clock). */
  t: number;
  added: number;
  claimed: number;
  completed: number;
  failed: number;
  dead: number;
  cancelled: number;
  /** Lateness (start − due, Redis clock) of the jobs claimed in this second. */
  latenessCount: number;
  latenessSumMs: number;
  /**
   * The upper bound (ms) of the histogram bucket holding the 99th percentile of this second's
   * lateness, or null when nothing was claimed. Beyond the last bound (5000 ms) it is that bound.
   */
  latenessP99Ms: number | null;
}

const WRAP = 2 ** 32;

/**
 * The activity of the `seconds` seconds ending at `endSecond` (epoch s), oldest first, one entry
 * per second (zeros where idle), summed over partitions; each partition's snapshots oldest first.
 */
export function activitySeries(
  partitions: ReadonlyArray<readonly CounterSnapshot[]>,
  endSecond: number,
  seconds: number,
): ActivitySecond[] {
  const start = endSecond - seconds + 1;
  const deltas = new Map<number, CounterValues>();
  for (const snapshots of partitions) {
    for (let i = 1; i < snapshots.length; i++) {
      const prev = snapshots[i - 1]!;
      const cur = snapshots[i]!;
      if (cur.second < start || cur.second > endSecond) continue;
      let sum = deltas.get(cur.second);
      if (!sum) deltas.set(cur.second, (sum = zeroCounters()));
      for (const name of COUNTER_NAMES) {
        // Snapshots keep each total mod 2^32: the difference mod 2^32 is right across a wrap.
        sum[name] += (((cur.values[name] - prev.values[name]) % WRAP) + WRAP) % WRAP;
      }
    }
  }
  const out: ActivitySecond[] = [];
  for (let s = start; s <= endSecond; s++) out.push(second(s, deltas.get(s) ?? zeroCounters()));
  return out;
}

function second(s: number, d: CounterValues): ActivitySecond {
  return {
    t: s * 1000,
    added: d.added,
    claimed: d.claimed,
    completed: d.completed,
    failed: d.failed,
    dead: d.dead,
    cancelled: d.cancelled,
    latenessCount: d['lat:+Inf'],
    latenessSumMs: d['lat:sum'],
    latenessP99Ms: p99Bound(d),
  };
}

function p99Bound(d: CounterValues): number | null {
  return latenessBound(d, 0.99);
}

/**
 * The upper bound (ms) of the lateness bucket holding quantile `q` (0..1) of the claims counted
 * in `d` (differences of the `lat:*` counters), or null when `d` counts none. Beyond the last
 * bound (5000 ms) it is that bound.
 */
export function latenessBound(d: CounterValues, q: number): number | null {
  const count = d['lat:+Inf'];
  if (count === 0) return null;
  const wanted = Math.max(1, Math.ceil(count * q));
  for (const le of LATENESS_BOUNDS_MS) {
    if (d[`lat:${le}`] >= wanted) return le;
  }
  return LATENESS_BOUNDS_MS[LATENESS_BOUNDS_MS.length - 1]!;
}

/**
 * What the counters grew by over a window, summed over partitions: per partition, its last
 * snapshot minus its first (each partition's snapshots oldest first; one snapshot counts nothing).
 */
export function growth(partitions: ReadonlyArray<readonly CounterSnapshot[]>): CounterValues {
  const sum = zeroCounters();
  for (const snapshots of partitions) {
    const first = snapshots[0];
    const last = snapshots.at(-1);
    if (!first || !last || first === last) continue;
    for (const name of COUNTER_NAMES) {
      sum[name] += (((last.values[name] - first.values[name]) % WRAP) + WRAP) % WRAP;
    }
  }
  return sum;
}
