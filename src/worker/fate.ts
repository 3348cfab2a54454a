/**
 * The fate policy: what becomes of an attempt once its outcome is known. One rule for the jobs of a
 * one-job handler (run-attempt.ts) and for each job of a batch (run-batch.ts); the Attempt
 * (attempt.ts) then sends the fate, fenced by its lease.
 *
 * - the handler resolved: complete (the ack carries the result when results are kept);
 * - the handler threw a SnoozeError: snooze, the attempt uncounted, due again after its delay;
 * - the handler threw an UnrecoverableError: bury at once, whatever attempts are left;
 * - the handler threw anything else: fail, retried after the job's backoff (retry-policy.ts), or
 *   buried by fail.lua when its attempts are spent;
 * - the payload could not be decoded, upgraded or validated: bury at once (no retry can help);
 * - the record is of a payload version newer than this worker's: release, uncharged, due after
 *   `newerVersionDelayMs`, so an upgraded worker takes it (a rolling deploy);
 */
import { DelayqError, isUnrecoverable, UnsupportedVersionError } from '../errors.js';
import { snoozeDelay } from '../snooze.js';
import type { Job } from '../job.js';
import type { ClaimedJob } from '../operations/claim.js';
import type { Attempt, AttemptState, ReleaseReason } from './attempt.js';
import type { RetryPolicy } from './retry-policy.js';
import { toError } from './to-error.js';

/** What an attempt ended with, as the policy reads it. */
export type Outcome =
  | { readonly kind: 'resolved' }
  | { readonly kind: 'threw'; readonly error: unknown }
  /** The payload could not be decoded, upgraded or validated. */
  | { readonly kind: 'unreadable'; readonly error: unknown }
  /** The record's payload version is newer than the worker's `version`. */
  | { readonly kind: 'newer-version' };

/** What is sent for the attempt. */
export type Fate =
  | { readonly kind: 'complete' }
  | { readonly kind: 'fail'; readonly error: Error; readonly retryDelayMs: number }
  | { readonly kind: 'bury'; readonly error: Error }
  | { readonly kind: 'release'; readonly reason: Exclude<ReleaseReason, 'snooze'>; readonly delayMs: number }
  | { readonly kind: 'snooze'; readonly delayMs: number };

/** An outcome other than a completion, and the fates it can have. */
export type Ending = Exclude<Outcome, { kind: 'resolved' }>;
type EndingFate = Exclude<Fate, { kind: 'complete' }>;

/** The handler resolved: one object for every job, not one per job. */
export const RESOLVED: Outcome = { kind: 'resolved' };
export const NEWER_VERSION: Ending = { kind: 'newer-version' };
const COMPLETE: Fate = { kind: 'complete' };

/** The worker settings the policy reads. */
export interface FateSettings {
  /** The payload version this worker knows up to. */
  version: number;
  /** How long a job of a newer payload version waits before it is due again. */
  newerVersionDelayMs: number;
}

/** Chooses each attempt's fate from its outcome, and sends it. */
export class FatePolicy {
  constructor(
    private readonly retry: RetryPolicy,
    private readonly settings: FateSettings,
    private readonly report: (err: unknown) => void,
  ) {}

  decide(outcome: Outcome, claimed: Pick<ClaimedJob, 'id' | 'header'>): Fate {
    return outcome.kind === 'resolved' ? COMPLETE : this.ending(outcome, claimed);
  }

  /** decide() then send(), for an outcome that is not a completion. */
  settle<T>(attempt: Attempt<T>, job: Job<T> | null, outcome: Ending): Promise<AttemptState> {
    return this.send(attempt, job, this.ending(outcome, attempt.claimed));
  }

  private ending(outcome: Ending, claimed: Pick<ClaimedJob, 'id' | 'header'>): EndingFate {
    switch (outcome.kind) {
      case 'newer-version':
        return { kind: 'release', reason: 'newer-version', delayMs: this.settings.newerVersionDelayMs };
      case 'unreadable':
        return { kind: 'bury', error: toError(outcome.error) };
      case 'threw': {
        const snoozeMs = snoozeDelay(outcome.error);
        if (snoozeMs !== undefined) return { kind: 'snooze', delayMs: snoozeMs };
        const error = toError(outcome.error);
        if (isUnrecoverable(error)) return { kind: 'bury', error };
        return { kind: 'fail', error, retryDelayMs: this.retry.delayMs(claimed.id, claimed.header, error) };
      }
    }
  }

  /**
   * Send a fate other than complete (a completion carries the handler's result, and the callers
   * send it: a one-job attempt without a promise per job, a batch's acks together). `job` is null
   * when the payload never became one. A job handed back to a newer version is reported, so a
   * rolling deploy shows.
   */
  async send<T>(attempt: Attempt<T>, job: Job<T> | null, fate: EndingFate): Promise<AttemptState> {
    switch (fate.kind) {
      case 'fail':
        return attempt.fail(job, fate.error, fate.retryDelayMs);
      case 'bury':
        return attempt.bury(job, fate.error);
      case 'snooze':
        // Only a handler snoozes (it threw), so there is always its job.
        if (!job)
          throw new DelayqError('DELAYQ_INTERNAL', `job ${attempt.claimed.id}: a snooze without its job`);
        return attempt.snooze(job, fate.delayMs);
      case 'release': {
        const state = await attempt.release(fate.reason, fate.delayMs);
        if (state === 'released' && fate.reason === 'newer-version') {
          const { id, header } = attempt.claimed;
          this.report(new UnsupportedVersionError(id, header.version, this.settings.version));
        }
        return state;
      }
    }
  }
}
