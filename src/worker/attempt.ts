/**
 * One attempt of a job inside a worker, as a state machine: the attempt starts `running` (claimed,
 * lease held) and ends in exactly one fate. Each transition is a named method that sends one
 * storage operation and emits the worker's event; a transition the current state does not allow is
 * refused here, in one place, before anything is sent. So no result is applied after the lease is
 * lost or the job handed back, and no attempt gets a second fate. Drawn in docs/STATE-MACHINES.md.
 *
 *   running ─complete─▶ completing ─claim.lua ack O/A─▶ completed
 *   running ─fail─────▶ failing ─fail.lua RETRY─▶ retrying | DEAD─▶ buried | ALREADY─▶ failed
 *   running ─bury─────▶ failing ─fail.lua (no retry)─▶ buried   (unreadable payload; UnrecoverableError)
 *   running ─release──▶ releasing ─release.lua─▶ released   (shutdown, newer version; snooze: SnoozeError)
 *   running ─loseLease▶ lost                    (the lease keeper found it gone)
 *   running ─cancel───▶ cancelled               (queue.cancel took the lease; told by a `C` wake message)
 *   completing | failing ─script refused (LEASE_LOST)─▶ lost
 *   completing | failing | releasing ─not sent (Redis unreachable)─▶ unsettled
 *
 * Progress reports (job.progress) are written only while `running`: every transition out of it
 * ends the attempt's ProgressReporter, so no report is written after the fate is sent.
 *
 * `cancelled` is terminal: the handler's late complete or fail is refused and reported as a
 * CancelledError (not applied: cancel.lua removed the lease, so the scripts would refuse it too).
 * A batch (issue 16) is several Attempts settled together: `complete` already goes through the
 * exchange (acks ride on the next claim call), so a batch completes with one script call and each
 * attempt keeps its own fate.
 */
import { CancelledError, DelayqError, isUnrecoverable, LeaseLostError, LogLimitError } from '../errors.js';
import type { Job, JobHost } from '../job.js';
import type { AckItem, AckOutcome } from '../operations/ack.js';
import type { ClaimedJob } from '../operations/claim.js';
import type { FailOutput, RecordedError } from '../operations/fail.js';
import { ScriptLeaseLost, ScriptLogFull } from '../redis/script-errors.js';
import type { AckListener } from './exchange.js';
import type { HeldLease } from './lease-keeper.js';
import { checkLogLine } from '../log-line.js';
import { ProgressReporter } from './progress.js';
import { toError } from './to-error.js';

/** Where an attempt is: running, settling (its fate's operation in flight), or its fate. */
export type AttemptState =
  | 'running'
  | 'completing'
  | 'failing'
  | 'releasing'
  | 'completed'
  | 'retrying'
  | 'buried'
  /** A resent fail found already applied (the first reply was lost): retried or buried then. */
  | 'failed'
  | 'released'
  | 'lost'
  /** queue.cancel() took the job while it ran: final, nothing more is sent. */
  | 'cancelled'
  /** The fate's operation could not be sent or answered: the lease expires and the reaper returns the job. */
  | 'unsettled';

/** The named transitions. */
export type Transition = 'complete' | 'fail' | 'bury' | 'release' | 'loseLease' | 'cancel';

/** Which transitions each state allows; every other call is refused. */
export const ALLOWED: Readonly<Record<AttemptState, readonly Transition[]>> = {
  running: ['complete', 'fail', 'bury', 'release', 'loseLease', 'cancel'],
  completing: [],
  failing: [],
  releasing: [],
  completed: [],
  retrying: [],
  buried: [],
  failed: [],
  released: [],
  lost: [],
  cancelled: [],
  unsettled: [],
};

/** A failed attempt as fail.lua takes it: retry after `retryDelayMs`, or bury when null. */
export interface AttemptFail {
  id: string;
  /** The lease member: the fence. */
  member: string;
  retryDelayMs: number | null;
  error: RecordedError;
}

/** A job handed back uncharged, due again after `delayMs`. */
export interface AttemptRelease {
  id: string;
  member: string;
  delayMs: number;
  /** The handler asked for it (SnoozeError): counted and told as a snooze. */
  snooze?: boolean;
}

/** A progress value (JSON, checked) written for the holder of `member`. */
export interface AttemptProgress {
  id: string;
  member: string;
  json: string;
}

/** A log line (checked) written for the holder of `member`, by the attempt numbered `attempt`. */
export interface AttemptLog {
  id: string;
  member: string;
  attempt: number;
  line: string;
}

/** An ack, with the id its partition is found by. */
export type AttemptAck = AckItem & { id: string };

/** The storage operations a fate needs (WorkerStorage; a stand-in in unit tests). */
export interface AttemptStore {
  /** Queue an ack; `listener` hears its outcome when the call carrying it answers (no promise). */
  ackTo(job: AttemptAck, listener: AckListener): void;
  /** Throws ScriptLeaseLost when the lease is not held. */
  progress(input: AttemptProgress): Promise<void>;
  /** Throws ScriptLeaseLost when the lease is not held, ScriptLogFull when the run has its lines. */
  log(input: AttemptLog): Promise<void>;
  fail(input: AttemptFail): Promise<FailOutput>;
  /** True when released; false when the lease was no longer held. */
  release(input: AttemptRelease): Promise<boolean>;
  /** The results of flow parent `id`'s children, decoded, by child id (flow.lua); `member` finds its keys. */
  childResults?(member: string, id: string): Promise<Record<string, unknown>>;
}

/** What an attempt tells its worker. */
export interface AttemptHooks<T> {
  completed(job: Job<T>, result: unknown): void;
  failed(job: Job<T>, error: Error, retryAt: Date): void;
  dead(job: Job<T> | null, error: Error, id: string): void;
  /**
   * The job was handed back uncharged, due again after `delayMs` (release.lua applied it). `job`
   * is the handler's for a snooze, null when the handler never got the job or did not finish.
   */
  released(id: string, reason: ReleaseReason, job: Job<T> | null, delayMs: number): void;
  /** A lost lease, a refused result, an operation not applied, a listener that threw. */
  error(err: Error): void;
  /** The lease need not be renewed any more: a fate is being settled, or the lease is gone. */
  settling(lease: HeldLease): void;
  /** job.extendLease(ms): extend `lease` to now + `ms`; rejects with LeaseLostError when it is gone. */
  extendLease(lease: HeldLease, ms: number): Promise<void>;
}

/** Who hears that an attempt completed by completeAndEnd has ended (run-attempt.ts's flight). */
export interface AttemptEnd {
  ended(): void;
}

/**
 * Why a release happens: a shutdown (it also aborts the handler's signal), a payload version newer
 * than this worker reads, or a snooze (the handler threw a SnoozeError; fate.ts).
 */
export type ReleaseReason = 'shutdown' | 'newer-version' | 'snooze';

/** One attempt of one claimed job, and the host of its Job (signal, extendLease, progress, log). */
export class Attempt<T> implements JobHost, AckListener {
  readonly lease: HeldLease;
  /** completeAndEnd(): what the ack's outcome is applied to, and who hears the attempt ended. */
  private completing: { job: Job<T>; result: unknown; flight: AttemptEnd } | undefined;
  /** Made on first use of `signal` (most handlers never look); `aborted` remembers an abort before that. */
  private controller: AbortController | undefined;
  private aborted: { reason: Error } | undefined;
  /** job.progress() wrote something: the ack deletes it. */
  private progressed = false;
  private current: AttemptState = 'running';
  /** Why the lease was lost, for the report of a result refused after that. */
  private lossDetail = '';
  /** A release was begun: the handler's late result is expected, and dropped quietly, whatever the release's outcome. */
  private handedBack = false;
  /**
   * job.progress(): coalesced writes, ended with the attempt (no write after its fate is sent).
   * Made on first use, as most handlers never report.
   */
  private progress: ProgressReporter | undefined;
  /** The attempt ended before its reporter was made: the reason a later report is refused, or null (none). */
  private progressEnd: Error | null | undefined;

  constructor(
    readonly claimed: ClaimedJob,
    private readonly store: AttemptStore,
    private readonly hooks: AttemptHooks<T>,
  ) {
    this.lease = {
      id: claimed.id,
      token: claimed.token,
      member: claimed.member,
      deadline: claimed.deadline,
      lost: false,
      keeperSlot: -1,
    };
  }

  /** job.childResults(): a flow parent's children's results; `{}` for a job of no flow. */
  async childResults(): Promise<Record<string, unknown>> {
    const { id, member, header } = this.claimed;
    if (!header.flow || !this.store.childResults) return {};
    return this.store.childResults(member, id);
  }

  /** job.progress(value): checked now, written coalesced while the attempt runs. */
  reportProgress(value: unknown): Promise<void> {
    if (!this.progress) {
      this.progress = new ProgressReporter(this.claimed.id, (json) => this.writeProgress(json));
      if (this.progressEnd !== undefined) this.progress.end(this.progressEnd);
    }
    return this.progress.report(value);
  }

  /**
   * job.log(line): checked, then written at once while the attempt runs. After its fate is sent
   * nothing is written: the promise rejects, saying why.
   */
  async writeLog(line: string): Promise<void> {
    const { id, member, header } = this.claimed;
    checkLogLine(id, line);
    if (this.current === 'lost')
      throw new LeaseLostError(id, this.lossDetail || 'the attempt lost its lease');
    if (this.current === 'cancelled') throw new CancelledError(id);
    if (this.current !== 'running') {
      throw new DelayqError(
        'DELAYQ_ATTEMPT_ENDED',
        `job ${id}: job.log() after the attempt ended (${this.current}); the line was not written. Log while the handler runs, and await each call`,
      );
    }
    try {
      await this.store.log({ id, member, attempt: header.attempts, line });
    } catch (err) {
      if (err instanceof ScriptLogFull) throw new LogLimitError(id, 'lines', err.max, err.max);
      if (!(err instanceof ScriptLeaseLost)) throw err;
      this.loseLease(err.detail);
      throw new LeaseLostError(id, err.detail);
    }
  }

  /** job.extendLease(ms). */
  extendLease(ms: number): Promise<void> {
    return this.hooks.extendLease(this.lease, ms);
  }

  get state(): AttemptState {
    return this.current;
  }

  /** The handler's signal: aborted when the lease is lost, the worker shuts down, or the job times out. */
  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.aborted) this.controller.abort(this.aborted.reason);
    }
    return this.controller.signal;
  }

  /** Abort the handler's signal without a transition (its timeout: the attempt then fails). */
  abort(reason: Error): void {
    if (this.aborted) return;
    this.aborted = { reason };
    this.controller?.abort(reason);
  }

  /**
   * The handler resolved: ack (lease member checked). `resultBytes`: the result encoded by the
   * codec, kept in the completed record (when the worker keeps completed jobs: keepCompleted).
   */
  complete(job: Job<T>, result: unknown, resultBytes?: Buffer): Promise<AttemptState> {
    return new Promise((resolve) =>
      this.completeAndEnd(job, result, resultBytes, { ended: () => resolve(this.current) }),
    );
  }

  /**
   * complete() without its promise, for a job run in a slot of its own (every job completes): the
   * ack's outcome is applied when the call carrying it answers, then `end.ended()` is called,
   * once, whatever happens.
   */
  completeAndEnd(job: Job<T>, result: unknown, resultBytes: Buffer | undefined, end: AttemptEnd): void {
    if (!this.begin('complete', 'completing')) return end.ended();
    this.completing = { job, result, flight: end };
    try {
      this.store.ackTo(this.ackOf(resultBytes), this);
    } catch (err) {
      this.ackFailed(err);
    }
  }

  /** AckListener: the call carrying completeAndEnd's ack answered. */
  ackSettled(outcome: AckOutcome): void {
    this.endCompletion(outcome, undefined);
  }

  /** AckListener: completeAndEnd's ack was not applied (the call failed). */
  ackFailed(err: unknown): void {
    this.endCompletion(undefined, err);
  }

  /** Apply the ack's outcome (or its failure) to the completion in progress, then end it. */
  private endCompletion(outcome: AckOutcome | undefined, err: unknown): void {
    const completing = this.completing;
    if (!completing) return;
    this.completing = undefined;
    try {
      if (outcome) this.acked(completing.job, completing.result, outcome);
      else this.notApplied(err);
    } catch (error) {
      this.hooks.error(toError(error));
    } finally {
      completing.flight.ended();
    }
  }

  /** The ack of a completed attempt. */
  private ackOf(resultBytes: Buffer | undefined): AttemptAck {
    const { id, member, header } = this.claimed;
    const ack: AttemptAck = {
      id,
      member,
      knownDeadline: this.lease.deadline,
      memberBytes: this.claimed.memberBytes,
      hadError: header.hasError,
      progressed: this.progressed,
      header,
    };
    if (resultBytes !== undefined) ack.result = resultBytes;
    if (header.flow) ack.flow = true;
    return ack;
  }

  /** The ack's outcome arrived. */
  private acked(job: Job<T>, result: unknown, outcome: AckOutcome): AttemptState {
    if (outcome.status === 'lost') return this.refused(outcome.detail);
    this.current = 'completed';
    // As tell() does, without its closure: every job completes.
    try {
      this.hooks.completed(job, result);
    } catch (err) {
      this.hooks.error(toError(err));
    }
    return this.current;
  }

  /**
   * The handler threw: retry after `retryDelayMs`, or bury when the script finds the attempts spent
   * (fate.ts chooses). `job` is null only when the payload never became one.
   */
  fail(job: Job<T> | null, error: Error, retryDelayMs: number): Promise<AttemptState> {
    if (!this.begin('fail', 'failing')) return Promise.resolve(this.current);
    return this.sendFail(job, error, retryDelayMs);
  }

  /**
   * Bury at once, whatever attempts are left: a payload that cannot be read or validated, or an
   * UnrecoverableError from the handler (recorded with `unrecoverable: true`).
   */
  bury(job: Job<T> | null, error: Error): Promise<AttemptState> {
    if (!this.begin('bury', 'failing')) return Promise.resolve(this.current);
    return this.sendFail(job, error, null);
  }

  /**
   * Hand the job back without charging the attempt, due after `delayMs`: at shutdown (the handler's
   * signal aborts, and whatever it returns later is dropped) or for a newer payload version.
   */
  release(reason: Exclude<ReleaseReason, 'snooze'>, delayMs: number): Promise<AttemptState> {
    return this.handBack(reason, delayMs, null);
  }

  /**
   * The handler threw a SnoozeError: hand the job back without charging the attempt, due after
   * `delayMs` (counted in `snoozed`, event `snoozed`).
   */
  snooze(job: Job<T>, delayMs: number): Promise<AttemptState> {
    return this.handBack('snooze', delayMs, job);
  }

  private async handBack(reason: ReleaseReason, delayMs: number, job: Job<T> | null): Promise<AttemptState> {
    if (!this.begin('release', 'releasing')) return this.current;
    this.handedBack = true;
    if (reason === 'shutdown') {
      this.abort(new DelayqError('DELAYQ_SHUTDOWN', 'the worker is shutting down'));
    }
    const { id, member } = this.claimed;
    let released: boolean;
    try {
      // false: the lease was gone already, and the reaper owns the job. Either way it is not ours.
      released = await this.store.release({
        id,
        member,
        delayMs,
        ...(reason === 'snooze' && { snooze: true }),
      });
    } catch (err) {
      return this.notApplied(err);
    }
    this.current = 'released';
    if (released) this.tell(() => this.hooks.released(id, reason, job, delayMs));
    return this.current;
  }

  /** The lease keeper found the lease gone while the handler runs: abort its signal and report. */
  loseLease(detail: string): AttemptState {
    if (!this.begin('loseLease', 'lost')) return this.current;
    this.lossDetail = detail;
    this.report(detail);
    return this.current;
  }

  /**
   * The job was cancelled while it ran (the `C` wake message named this attempt's lease): abort the
   * handler's signal with a CancelledError. Nothing is sent: cancel.lua already ended the job.
   */
  cancel(): AttemptState {
    if (!this.begin('cancel', 'cancelled')) return this.current;
    this.lease.lost = true;
    this.abort(new CancelledError(this.claimed.id));
    return this.current;
  }

  /** One coalesced progress write; a refusal means the lease is gone, which the attempt learns too. */
  private async writeProgress(json: string): Promise<void> {
    const { id, member } = this.claimed;
    this.progressed = true;
    try {
      await this.store.progress({ id, member, json });
    } catch (err) {
      if (!(err instanceof ScriptLeaseLost)) throw err;
      this.loseLease(err.detail);
      throw new LeaseLostError(id, err.detail);
    }
  }

  private async sendFail(
    job: Job<T> | null,
    error: Error,
    retryDelayMs: number | null,
  ): Promise<AttemptState> {
    const { id, member, header } = this.claimed;
    const recorded: RecordedError = { name: error.name, message: error.message, attempt: header.attempts };
    if (error.stack !== undefined) recorded.stack = error.stack;
    if (isUnrecoverable(error)) recorded.unrecoverable = true;
    let out: FailOutput;
    try {
      out = await this.store.fail({ id, member, retryDelayMs, error: recorded });
    } catch (err) {
      return this.notApplied(err);
    }
    if (out.outcome === 'retry') {
      this.current = 'retrying';
      if (job) this.tell(() => this.hooks.failed(job, error, new Date(out.at)));
    } else if (out.outcome === 'dead') {
      this.current = 'buried';
      this.tell(() => this.hooks.dead(job, error, id));
    } else {
      this.current = 'failed';
    }
    return this.current;
  }

  /**
   * Enter `next` if the current state allows `transition`; otherwise refuse it. A result after a
   * lost lease is reported (fencing: refused, not applied); one after a release is expected and
   * dropped; anything else is a second fate, which is a bug and reported as one.
   */
  private begin(transition: Transition, next: AttemptState): boolean {
    if (ALLOWED[this.current].includes(transition)) {
      this.current = next;
      const reason =
        next === 'lost'
          ? new LeaseLostError(this.claimed.id, 'the attempt lost its lease')
          : next === 'cancelled'
            ? new CancelledError(this.claimed.id)
            : null;
      if (this.progress) this.progress.end(reason);
      else this.progressEnd = reason;
      this.hooks.settling(this.lease);
      return true;
    }
    if (transition === 'loseLease' || transition === 'release' || transition === 'cancel') return false;
    if (this.current === 'cancelled') {
      // The handler's late result: refused (cancel.lua took the lease) and said so.
      this.hooks.error(new CancelledError(this.claimed.id));
    } else if (this.current === 'lost') {
      this.report(`result refused: ${this.lossDetail}`);
    } else if (!this.handedBack) {
      this.hooks.error(
        new DelayqError(
          'DELAYQ_INTERNAL',
          `job ${this.claimed.id}: ${transition} refused, the attempt is already ${this.current}`,
        ),
      );
    }
    return false;
  }

  /** The script refused the fate: the lease was lost (expired, or another worker holds the job). */
  private refused(detail: string): AttemptState {
    this.current = 'lost';
    this.lossDetail = detail;
    this.report(`result refused: ${detail}`);
    return this.current;
  }

  /** Not applied (Redis unreachable, ...): the lease will expire and the job come back. Nothing lost. */
  private notApplied(err: unknown): AttemptState {
    if (err instanceof ScriptLeaseLost) return this.refused(err.detail);
    this.current = 'unsettled';
    this.hooks.error(toError(err));
    return this.current;
  }

  private report(detail: string): void {
    const error = new LeaseLostError(this.claimed.id, detail);
    this.lease.lost = true;
    this.abort(error);
    this.hooks.error(error);
  }

  /** Run a hook; a listener that throws is reported, never taken for a failed operation. */
  private tell(hook: () => void): void {
    try {
      hook();
    } catch (err) {
      this.hooks.error(toError(err));
    }
  }
}
