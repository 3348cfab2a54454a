/** The sizes of a full run and of the quick run (CI keeps the harness working with the latter). */

/** Counts, durations and repetitions of every workload. */
export interface Profile {
  name: 'full' | 'quick';
  reps: number;
  /** Jobs per addBulk call in every workload. */
  bulkSize: number;
  w1: { jobs: number; jobsAtConcurrency1: number; concurrencies: number[] };
  w2: { jobs: number; spanMs: number; concurrency: number };
  w3: { jobs: number; spanMs: number; concurrency: number; singles: number; singleDelayMs: number };
  w4: { waiting: number; warmupMs: number; windowMs: number };
  /** W5 is deterministic to a few bytes: its own repetition count. */
  w5: { jobs: number; payloadBytes: number; reps: number };
  w6: { settings: Array<'default' | 'short'>; capMs: { default: number; short: number } };
  w7: { waiting: number[]; jobs: number; singles: number; concurrency: number; reps: number };
  /**
   * W8: arrival rates to step through (jobs/s), each held for `stepMs`; jobs are added every `tickMs`,
   * each due `leadMs` to `leadMs + spreadMs` after its add call; a step holds when the p99 lateness
   * is at most `p99LimitMs` and the producer kept up. The step search is the measurement: its own
   * repetition count.
   */
  w8: {
    rates: number[];
    stepMs: number;
    tickMs: number;
    leadMs: number;
    spreadMs: number;
    p99LimitMs: number;
    concurrency: number;
    reps: number;
  };
  ceiling: { requests: number; pipeline: number };
}

export const FULL: Profile = {
  name: 'full',
  reps: 3,
  bulkSize: 1_000,
  w1: { jobs: 50_000, jobsAtConcurrency1: 10_000, concurrencies: [1, 50] },
  w2: { jobs: 50_000, spanMs: 5_000, concurrency: 50 },
  w3: { jobs: 500, spanMs: 10_000, concurrency: 10, singles: 20, singleDelayMs: 1_000 },
  w4: { waiting: 1_000, warmupMs: 3_000, windowMs: 60_000 },
  w5: { jobs: 100_000, payloadBytes: 100, reps: 1 },
  w6: { settings: ['default', 'short'], capMs: { default: 75_000, short: 15_000 } },
  // 10⁶ waiting is what issue 5 asks for; filling that backlog through each system's addBulk is
  // most of W7's time (measured in docs/benchmarks.md, "W7 scale", row "backlog fill").
  w7: { waiting: [1_000, 100_000, 1_000_000], jobs: 10_000, singles: 10, concurrency: 50, reps: 1 },
  // Issue 14's figure: 10 s per step (the issue asks for 10–30 s; --w8-seconds=30 for the long form).
  w8: {
    rates: [500, 1_000, 2_000, 4_000, 6_000, 8_000, 10_000, 15_000, 20_000, 30_000],
    stepMs: 10_000,
    tickMs: 100,
    leadMs: 1_000,
    spreadMs: 100,
    p99LimitMs: 10,
    concurrency: 50,
    reps: 1,
  },
  ceiling: { requests: 100_000, pipeline: 16 },
};

export const QUICK: Profile = {
  name: 'quick',
  reps: 1,
  bulkSize: 1_000,
  w1: { jobs: 2_000, jobsAtConcurrency1: 1_000, concurrencies: [1, 50] },
  w2: { jobs: 2_000, spanMs: 1_000, concurrency: 50 },
  w3: { jobs: 50, spanMs: 1_000, concurrency: 10, singles: 3, singleDelayMs: 200 },
  // A blocking command counts in INFO when it returns: with a 2 s window no system's idle
  // worker had one return (all read 0), so the quick figure could not catch a regression.
  w4: { waiting: 100, warmupMs: 500, windowMs: 6_000 },
  w5: { jobs: 2_000, payloadBytes: 100, reps: 1 },
  w6: { settings: ['short'], capMs: { default: 75_000, short: 10_000 } },
  w7: { waiting: [1_000], jobs: 500, singles: 2, concurrency: 50, reps: 1 },
  w8: {
    rates: [500, 2_000],
    stepMs: 2_000,
    tickMs: 100,
    leadMs: 1_000,
    spreadMs: 100,
    p99LimitMs: 10,
    concurrency: 50,
    reps: 1,
  },
  ceiling: { requests: 10_000, pipeline: 16 },
};
