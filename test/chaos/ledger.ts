/**
 * The chaos ledger: what each worker process did, one JSON line per event, appended synchronously
 * to a file outside the Redis under test (a SIGKILL loses nothing already written). Times named
 * `now`, `runAt` and `deadline` are the Redis clock; `at`, `start` and `end` are the local clock
 * (one machine, so comparable across processes).
 */
import { readJsonLines } from '../support/json-lines.js';

/** What a chaos job asks its handler to do (the job's payload). */
export interface ChaosPayload {
  /** How long the handler runs (a plain sleep that ignores job.signal). */
  ms: number;
  /** Throw on every attempt: the job must end dead with this reason. */
  failAlways?: boolean;
  /** Throw on the first attempt only: the job must complete on a later one. */
  failOnce?: boolean;
  /** Kill the worker process (SIGKILL of itself) when the handler starts. */
  crash?: boolean;
  /** Block the event loop this long (a busy loop) before the sleep. */
  blockMs?: number;
  /**
   * A flow's parent with this many children (queue.addFlow): its handler reads job.childResults()
   * first and records a `flow` line with how many it found (all, if the parent ran after them).
   */
  flowChildren?: number;
}

/** The message a deliberate failure throws with. */
export const DELIBERATE = 'deliberate failure';

/** The outcome of a token-checked call as the worker saw it. */
export type CallOutcome =
  | 'ok'
  | 'already'
  | 'retry'
  | 'dead'
  | 'released'
  | 'not-released'
  | `refused: ${string}`
  | `error: ${string}`;

/** The outcome of one ack, fail or release, with the token it was sent with. */
export interface SettleEntry<P extends 'ack' | 'fail' | 'release'> {
  phase: P;
  pid: number;
  id: string;
  token: string;
  outcome: CallOutcome;
  at: number;
  /** The connection dropped while the call was out: ioredis may have sent it twice. */
  resent: boolean;
}

/** One ledger line. */
export type ChaosEntry =
  | {
      phase: 'claim';
      pid: number;
      at: number;
      now: number;
      leaseMs: number;
      jobs: Array<{ id: string; token: string; attempt: number; runAt: number }>;
    }
  | {
      phase: 'extend';
      pid: number;
      at: number;
      now: number;
      leases: Array<{ id: string; token: string; deadline: number }>;
    }
  | {
      phase: 'start';
      pid: number;
      id: string;
      token: string;
      attempt: number;
      start: number;
      /** job.claimedAt: the start by the worker's lower bound of the Redis clock. */
      startNow: number;
    }
  | { phase: 'end'; pid: number; id: string; token: string; attempt: number; start: number; end: number }
  | SettleEntry<'ack'>
  | SettleEntry<'fail'>
  | SettleEntry<'release'>
  | {
      phase: 'event';
      pid: number;
      event: 'completed' | 'failed' | 'dead' | 'error';
      id: string | null;
      message: string;
      at: number;
    }
  | { phase: 'exit'; pid: number; at: number; how: 'closed' | 'crash' }
  /** A flow parent's run read its children's results: `found` of `children` (flowChildren). */
  | { phase: 'flow'; pid: number; id: string; token: string; found: number; children: number; at: number };

/** Parse a ledger file: one JSON object per complete line (a trailing partial line is ignored). */
export function readChaosLedger(path: string): ChaosEntry[] {
  return readJsonLines<ChaosEntry>(path);
}
