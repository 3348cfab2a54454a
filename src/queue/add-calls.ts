/**
 * How one add() or addBulk() is cut into add script calls. A script holds Redis for its whole run,
 * and every command sent meanwhile waits for it: a worker's claim at a due time among them. So a
 * call is bounded by jobs and by bytes (docs/ARCHITECTURE.md §4.1 gives the figures these were
 * chosen by): jobs bound the per-job work (checks, HMGET, HSET, ZADD), bytes what scales with the
 * size (reading the value, copying each record into a Lua string and then into the hash).
 */
import { packedJobBytes, type PackableJob } from '../operations/add-pack.js';

/** The bounds of one add script call, and how many such calls one partition has out at a time. */
export interface AddCallBounds {
  /** Jobs per call at most. */
  readonly jobs: number;
  /** Bytes of jobs (packed value, add-pack.ts) per call at most; a larger job goes alone. */
  readonly bytes: number;
  /**
   * Calls out at a time per partition: with two, one runs while the next is on its way, so Redis
   * has no gap; the second waits in the connection, so a claim may wait for both.
   */
  readonly inFlight: number;
}

/** The bounds delayq uses. */
export const ADD_CALL_BOUNDS: AddCallBounds = { jobs: 200, bytes: 256 * 1024, inFlight: 2 };

let bounds: AddCallBounds = ADD_CALL_BOUNDS;

/** The bounds in use. */
export function addCallBounds(): AddCallBounds {
  return bounds;
}

/**
 * Use other bounds from now on, in this process: an internal switch for benchmarks that compare
 * them (bench/add-cost.ts), not an option.
 */
export function setAddCallBounds(next: Partial<AddCallBounds>): void {
  bounds = { ...bounds, ...next };
}

/**
 * The length of each call for `jobs` (one partition's, in order) under `limit`: as many jobs as
 * fit both bounds, and never fewer than one.
 */
export function addCallLengths(jobs: readonly PackableJob[], limit: AddCallBounds = bounds): number[] {
  const lengths: number[] = [];
  let count = 0;
  let bytes = 0;
  for (const job of jobs) {
    const size = packedJobBytes(job);
    if (count > 0 && (count === limit.jobs || bytes + size > limit.bytes)) {
      lengths.push(count);
      count = 0;
      bytes = 0;
    }
    count++;
    bytes += size;
  }
  if (count > 0) lengths.push(count);
  return lengths;
}
