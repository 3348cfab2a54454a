/** Messages between the bench parent and a worker process (worker-process.ts), over the IPC channel. */
import type { Settings, SystemName } from '../adapters/adapter.js';

/**
 * 'count': record lateness, report once `expect` jobs have completed.
 * 'each': report every job as it starts.
 * 'hold': report every job as it starts, then never finish it (crash recovery).
 */
export type ChildMode = 'count' | 'each' | 'hold';

/** How the parent configures a worker process (JSON in argv[2]). */
export interface ChildConfig {
  system: SystemName;
  url: string;
  queue: string;
  concurrency: number;
  settings: Settings;
  mode: ChildMode;
  expect?: number;
}

/** Child to parent. Times `*Ms` from performance.now() are the child's monotonic clock. */
export type ChildMessage =
  | { type: 'ready' }
  | { type: 'started'; pid: number; i: number; latenessMs: number; serverLatenessMs: number | null }
  | {
      type: 'done';
      completed: number;
      /** First handler start to the `expect`-th completion, monotonic. */
      elapsedMs: number;
      /** Handler start (Date.now()) minus payload.due, per job. */
      latenessMs: number[];
      /** Redis-clock lateness, per job, when the system has it. */
      serverLatenessMs: number[];
    };

/** Parent to child. */
export type ParentMessage = { type: 'close' };
