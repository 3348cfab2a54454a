import { describe, expect, it } from 'vitest';
import { CancelledError, DelayqError, LeaseLostError, LogLimitError, ValidationError } from '../errors.js';
import { Job } from '../job.js';
import type { AckOutcome } from '../operations/ack.js';
import type { ClaimedJob } from '../operations/claim.js';
import { NEW_JOB_HEADER } from '../record/index.js';
import type { FailOutput } from '../operations/fail.js';
import { ScriptLeaseLost, ScriptLogFull } from '../redis/script-errors.js';
import {
  ALLOWED,
  Attempt,
  type AttemptAck,
  type AttemptFail,
  type AttemptLog,
  type AttemptProgress,
  type AttemptRelease,
  type AttemptState,
  type AttemptStore,
} from './attempt.js';
import type { AckListener } from './exchange.js';
import type { HeldLease } from './lease-keeper.js';

/** A store whose replies the test sets, recording every call it gets. */
class FakeStore implements AttemptStore {
  readonly calls: Array<['ack', AttemptAck] | ['fail', AttemptFail] | ['release', AttemptRelease]> = [];
  ackReply: AckOutcome | Error = { status: 'ok' };
  failReply: FailOutput | Error = { outcome: 'retry', at: 5_000 };
  releaseReply: boolean | Error = true;

  async ack(job: AttemptAck): Promise<AckOutcome> {
    this.calls.push(['ack', job]);
    return reply(this.ackReply);
  }

  ackTo(job: AttemptAck, listener: AckListener): void {
    this.ack(job).then(
      (outcome) => listener.ackSettled(outcome),
      (err: unknown) => listener.ackFailed(err),
    );
  }

  async fail(input: AttemptFail): Promise<FailOutput> {
    this.calls.push(['fail', input]);
    return reply(this.failReply);
  }

  /** The progress values written (JSON), in order. */
  readonly progressWrites: string[] = [];

  async progress(input: AttemptProgress): Promise<void> {
    this.progressWrites.push(input.json);
  }

  /** The log lines written, in order; `logReply` an error to refuse them with. */
  readonly logWrites: AttemptLog[] = [];
  logReply: Error | null = null;

  async log(input: AttemptLog): Promise<void> {
    if (this.logReply) throw this.logReply;
    this.logWrites.push(input);
  }

  async release(input: AttemptRelease): Promise<boolean> {
    this.calls.push(['release', input]);
    return reply(this.releaseReply);
  }
}

function reply<R>(value: R | Error): R {
  if (value instanceof Error) throw value;
  return value;
}

const claimed: ClaimedJob = {
  id: 'job-1',
  member: 'tok-1|job-1',
  token: 'tok-1',
  header: { ...NEW_JOB_HEADER, attempts: 2, claims: 2, claimedAt: 1_010, runDue: 1_000, holder: 1 },
  payload: Buffer.from(''),
  runAt: 1_000,
  claimedAt: 1_010,
  deadline: 16_010,
};

function setup(throwingListener = false) {
  const store = new FakeStore();
  const seen: string[] = [];
  const errors: Error[] = [];
  const settled: HeldLease[] = [];
  const attempt = new Attempt<string>(claimed, store, {
    completed: (job, result) => {
      seen.push(`completed ${job.id} ${String(result)}`);
      if (throwingListener) throw new Error('listener broke');
    },
    failed: (job, error, retryAt) => seen.push(`failed ${job.id} ${error.message} ${retryAt.getTime()}`),
    dead: (job, error, id) => seen.push(`dead ${job === null ? 'null' : job.id} ${error.message} ${id}`),
    released: (id, reason, job, delayMs) =>
      seen.push(`released ${id} ${reason} ${job === null ? 'null' : job.id} ${delayMs}`),
    error: (err) => errors.push(err),
    settling: (lease) => settled.push(lease),
    extendLease: async () => {},
  });
  const job = new Job<string>(
    claimed.id,
    'payload',
    claimed.header.attempts,
    claimed.header.maxAttempts,
    new Date(claimed.runAt),
    new Date(claimed.claimedAt),
    attempt,
  );
  return { store, seen, errors, settled, attempt, job };
}

describe('Attempt', () => {
  it('starts running, holding the claimed lease, with its signal not aborted', () => {
    const { attempt } = setup();
    expect(attempt.state).toBe('running');
    expect(attempt.lease).toEqual({
      id: 'job-1',
      token: 'tok-1',
      member: 'tok-1|job-1',
      deadline: 16_010,
      lost: false,
      // Held by no keeper yet.
      keeperSlot: -1,
    });
    expect(attempt.signal.aborted).toBe(false);
  });

  it('complete: acks with the lease member and the known deadline, then emits completed', async () => {
    const { attempt, job, store, seen, errors, settled } = setup();
    const pending = attempt.complete(job, 'R');
    expect(attempt.state).toBe('completing');
    expect(settled).toEqual([attempt.lease]);
    expect(await pending).toBe('completed');
    expect(store.calls).toEqual([
      [
        'ack',
        {
          id: 'job-1',
          member: 'tok-1|job-1',
          knownDeadline: 16_010,
          hadError: false,
          progressed: false,
          // The claimed header: the completed record keeps its claim block and max attempts.
          header: claimed.header,
        },
      ],
    ]);
    expect(seen).toEqual(['completed job-1 R']);
    expect(errors).toEqual([]);
  });

  it('complete: a resent ack found already applied is a completion', async () => {
    const { attempt, job, store, seen } = setup();
    store.ackReply = { status: 'already' };
    expect(await attempt.complete(job, 1)).toBe('completed');
    expect(seen).toEqual(['completed job-1 1']);
  });

  it('complete: an ack the script refuses leaves the attempt lost, reported and aborted', async () => {
    const { attempt, job, store, seen, errors } = setup();
    store.ackReply = { status: 'lost', detail: 'expired' };
    expect(await attempt.complete(job, 1)).toBe('lost');
    expect(seen).toEqual([]);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toBeInstanceOf(LeaseLostError);
    expect(errors[0]!.message).toMatch(/lease on job job-1 was lost \(result refused: expired\)/);
    expect(attempt.lease.lost).toBe(true);
    expect(attempt.signal.aborted).toBe(true);
  });

  /** An AttemptEnd that counts its calls, and a promise of the first. */
  function endCounter() {
    let calls = 0;
    let resolve!: () => void;
    const first = new Promise<void>((r) => (resolve = r));
    return {
      end: {
        ended: () => {
          calls++;
          resolve();
        },
      },
      first,
      calls: () => calls,
    };
  }

  /** completeAndEnd(job, result), waited on until the end is told; how often it was told by then. */
  async function completedToEnd(
    attempt: Attempt<string>,
    job: Job<string>,
    result: unknown,
  ): Promise<number> {
    const { end, first, calls } = endCounter();
    attempt.completeAndEnd(job, result, undefined, end);
    await first;
    return calls();
  }

  it('completeAndEnd: the ack goes, then completed is emitted and the end told once', async () => {
    const { attempt, job, store, seen, errors } = setup();
    const { end, first, calls } = endCounter();
    attempt.completeAndEnd(job, 'R', undefined, end);
    expect(attempt.state).toBe('completing');
    expect(calls()).toBe(0);
    await first;
    expect(attempt.state).toBe('completed');
    expect(store.calls.map((c) => c[0])).toEqual(['ack']);
    expect(seen).toEqual(['completed job-1 R']);
    expect(errors).toEqual([]);
    expect(calls()).toBe(1);
  });

  it('completeAndEnd: a refused ack leaves the attempt lost and reported; the end is told once', async () => {
    const { attempt, job, store, seen, errors } = setup();
    store.ackReply = { status: 'lost', detail: 'expired' };
    expect(await completedToEnd(attempt, job, 1)).toBe(1);
    expect(attempt.state).toBe('lost');
    expect(seen).toEqual([]);
    expect(errors[0]).toBeInstanceOf(LeaseLostError);
  });

  it('completeAndEnd: an ack not sent leaves the attempt unsettled and reported; the end is told once', async () => {
    const { attempt, job, store, errors } = setup();
    store.ackReply = new Error('connection is closed');
    expect(await completedToEnd(attempt, job, 1)).toBe(1);
    expect(attempt.state).toBe('unsettled');
    expect(errors.map((e) => e.message)).toEqual(['connection is closed']);
  });

  it('completeAndEnd: a listener of completed that throws is reported, and the end still told', async () => {
    const { attempt, job, errors } = setup(true);
    expect(await completedToEnd(attempt, job, 1)).toBe(1);
    expect(attempt.state).toBe('completed');
    expect(errors.map((e) => e.message)).toEqual(['listener broke']);
  });

  it('completeAndEnd after a cancel: nothing is sent, the result is refused, the end told at once', () => {
    const { attempt, job, store, errors } = setup();
    attempt.cancel();
    const { end, calls } = endCounter();
    attempt.completeAndEnd(job, 1, undefined, end);
    expect(calls()).toBe(1);
    expect(store.calls).toEqual([]);
    expect(errors[0]).toBeInstanceOf(CancelledError);
  });

  it('fail: records the error and retries after the delay, emitting failed with the retry time', async () => {
    const { attempt, job, store, seen } = setup();
    const error = new TypeError('boom');
    expect(await attempt.fail(job, error, 250)).toBe('retrying');
    expect(store.calls).toEqual([
      [
        'fail',
        {
          id: 'job-1',
          member: 'tok-1|job-1',
          retryDelayMs: 250,
          error: { name: 'TypeError', message: 'boom', attempt: 2, stack: error.stack },
        },
      ],
    ]);
    expect(seen).toEqual(['failed job-1 boom 5000']);
  });

  it('fail: buried when the script finds the attempts spent', async () => {
    const { attempt, job, store, seen } = setup();
    store.failReply = { outcome: 'dead', at: 7_000 };
    expect(await attempt.fail(job, new Error('last'), 250)).toBe('buried');
    expect(seen).toEqual(['dead job-1 last job-1']);
  });

  it('fail: a resent fail found already applied ends failed, with no event', async () => {
    const { attempt, job, store, seen, errors } = setup();
    store.failReply = { outcome: 'already' };
    expect(await attempt.fail(job, new Error('x'), 250)).toBe('failed');
    expect(seen).toEqual([]);
    expect(errors).toEqual([]);
  });

  it('bury: fails with no retry delay, whatever attempts are left; dead names the id when there is no job', async () => {
    const { attempt, store, seen } = setup();
    store.failReply = { outcome: 'dead', at: 7_000 };
    expect(await attempt.bury(null, new Error('undecodable'))).toBe('buried');
    expect(store.calls[0]![0]).toBe('fail');
    expect((store.calls[0]![1] as AttemptFail).retryDelayMs).toBeNull();
    expect(seen).toEqual(['dead null undecodable job-1']);
  });

  it('release at shutdown: aborts the signal, hands the job back due now; a late result is dropped silently', async () => {
    const { attempt, job, store, seen, errors } = setup();
    expect(await attempt.release('shutdown', 0)).toBe('released');
    expect(attempt.signal.aborted).toBe(true);
    expect((attempt.signal.reason as DelayqError).code).toBe('DELAYQ_SHUTDOWN');
    expect(await attempt.complete(job, 'late')).toBe('released');
    expect(await attempt.fail(job, new Error('late'), 10)).toBe('released');
    expect(store.calls).toEqual([['release', { id: 'job-1', member: 'tok-1|job-1', delayMs: 0 }]]);
    expect(seen).toEqual(['released job-1 shutdown null 0']);
    expect(errors).toEqual([]);
  });

  it('a release that cannot be sent leaves the attempt unsettled; the late result is still dropped quietly', async () => {
    const { attempt, job, store, errors } = setup();
    store.releaseReply = new Error('connection is closed');
    expect(await attempt.release('shutdown', 0)).toBe('unsettled');
    expect(await attempt.complete(job, 'late')).toBe('unsettled');
    expect(store.calls.map((c) => c[0])).toEqual(['release']);
    expect(errors.map((e) => e.message)).toEqual(['connection is closed']);
  });

  it('release for a newer payload version: hands the job back after the delay without aborting', async () => {
    const { attempt, store } = setup();
    expect(await attempt.release('newer-version', 60_000)).toBe('released');
    expect(attempt.signal.aborted).toBe(false);
    expect(store.calls).toEqual([['release', { id: 'job-1', member: 'tok-1|job-1', delayMs: 60_000 }]]);
  });

  it('snooze: hands the job back after the delay as a snooze, without aborting; the worker hears of it', async () => {
    const { attempt, job, store, seen } = setup();
    expect(await attempt.snooze(job, 30_000)).toBe('released');
    expect(attempt.signal.aborted).toBe(false);
    expect(store.calls).toEqual([
      ['release', { id: 'job-1', member: 'tok-1|job-1', delayMs: 30_000, snooze: true }],
    ]);
    expect(seen).toEqual(['released job-1 snooze job-1 30000']);
  });

  it('a release the script did not apply (lease gone) is not told as released', async () => {
    const { attempt, store, seen } = setup();
    store.releaseReply = false;
    expect(await attempt.release('shutdown', 0)).toBe('released');
    expect(seen).toEqual([]);
  });

  it('job.progress while running is written through the attempt, and the ack then deletes it', async () => {
    const { attempt, job, store } = setup();
    await job.progress({ step: 1 });
    expect(store.progressWrites).toEqual(['{"step":1}']);
    await attempt.complete(job, 'ok');
    expect(store.calls).toEqual([['ack', expect.objectContaining({ progressed: true })]]);
  });

  it('job.progress first called after the attempt ended: resolves unwritten once completed, rejects once lost or cancelled', async () => {
    const done = setup();
    await done.attempt.complete(done.job, 'ok');
    await expect(done.job.progress({ step: 1 })).resolves.toBeUndefined();
    const lost = setup();
    lost.attempt.loseLease('expired');
    await expect(lost.job.progress({ step: 1 })).rejects.toBeInstanceOf(LeaseLostError);
    const cancelled = setup();
    cancelled.attempt.cancel();
    await expect(cancelled.job.progress({ step: 1 })).rejects.toBeInstanceOf(CancelledError);
    expect([done, lost, cancelled].flatMap((t) => t.store.progressWrites)).toEqual([]);
  });

  it('job.log while running is written with the member and attempt number; the ack has nothing to do for it', async () => {
    const { attempt, job, store } = setup();
    await job.log('fetched 3 files');
    expect(store.logWrites).toEqual([
      { id: 'job-1', member: 'tok-1|job-1', attempt: 2, line: 'fetched 3 files' },
    ]);
    await attempt.complete(job, 'ok');
    expect(store.calls).toEqual([['ack', expect.objectContaining({ progressed: false })]]);
  });

  it('job.log refuses a line that is not one short line of text, before sending anything', async () => {
    const { job, store } = setup();
    await expect(job.log('two\nlines')).rejects.toBeInstanceOf(ValidationError);
    await expect(job.log('')).rejects.toBeInstanceOf(ValidationError);
    await expect(job.log(42 as unknown as string)).rejects.toThrow(/must be a string, got number/);
    await expect(job.log('x'.repeat(513))).rejects.toMatchObject({
      cap: 'line-bytes',
      size: 513,
      limit: 512,
    });
    await expect(job.log('é'.repeat(257))).rejects.toBeInstanceOf(LogLimitError);
    expect(store.logWrites).toEqual([]);
  });

  it('job.log: a full run becomes LogLimitError, a lost lease LeaseLostError (and the attempt is lost)', async () => {
    const full = setup();
    full.store.logReply = new ScriptLogFull('20');
    await expect(full.job.log('one more')).rejects.toMatchObject({
      code: 'DELAYQ_LOG_LIMIT',
      cap: 'lines',
      limit: 20,
    });
    expect(full.attempt.state).toBe('running');
    const lost = setup();
    lost.store.logReply = new ScriptLeaseLost('expired');
    await expect(lost.job.log('late')).rejects.toBeInstanceOf(LeaseLostError);
    expect(lost.attempt.state).toBe('lost');
  });

  it('job.log after the attempt ended is refused and not written', async () => {
    const done = setup();
    await done.attempt.complete(done.job, 'ok');
    await expect(done.job.log('after')).rejects.toMatchObject({ code: 'DELAYQ_ATTEMPT_ENDED' });
    const lost = setup();
    lost.attempt.loseLease('expired');
    await expect(lost.job.log('after')).rejects.toBeInstanceOf(LeaseLostError);
    const cancelled = setup();
    cancelled.attempt.cancel();
    await expect(cancelled.job.log('after')).rejects.toBeInstanceOf(CancelledError);
    expect([done, lost, cancelled].flatMap((t) => t.store.logWrites)).toEqual([]);
  });

  it('loseLease: aborts the signal and reports once; a late ack or fail is refused without being sent', async () => {
    const { attempt, job, store, seen, errors } = setup();
    expect(attempt.loseLease('not renewed in time')).toBe('lost');
    expect(attempt.signal.reason).toBeInstanceOf(LeaseLostError);
    expect(attempt.loseLease('again')).toBe('lost');
    expect(errors.map((e) => e.message)).toEqual([expect.stringMatching(/\(not renewed in time\)/)]);
    expect(await attempt.complete(job, 'late')).toBe('lost');
    expect(await attempt.fail(job, new Error('aborted'), 10)).toBe('lost');
    expect(await attempt.release('shutdown', 0)).toBe('lost');
    expect(store.calls).toEqual([]);
    expect(seen).toEqual([]);
    expect(errors.slice(1).map((e) => e.message)).toEqual([
      expect.stringMatching(/result refused: not renewed in time/),
      expect.stringMatching(/result refused: not renewed in time/),
    ]);
  });

  it('cancel: aborts the signal with CancelledError, sends nothing; a late ack or fail is refused and reported as cancelled', async () => {
    const { attempt, job, store, seen, errors, settled } = setup();
    expect(attempt.cancel()).toBe('cancelled');
    expect(attempt.signal.reason).toBeInstanceOf(CancelledError);
    expect(settled).toEqual([attempt.lease]);
    expect(attempt.cancel()).toBe('cancelled');
    expect(attempt.loseLease('late keeper')).toBe('cancelled');
    expect(await attempt.complete(job, 'late')).toBe('cancelled');
    expect(await attempt.fail(job, new Error('aborted'), 10)).toBe('cancelled');
    expect(await attempt.release('shutdown', 0)).toBe('cancelled');
    expect(store.calls).toEqual([]);
    expect(seen).toEqual([]);
    expect(errors.map((e) => [e.name, (e as CancelledError).jobId])).toEqual([
      ['CancelledError', 'job-1'],
      ['CancelledError', 'job-1'],
    ]);
  });

  it('a fail the script refuses (lease lost) leaves the attempt lost and reported', async () => {
    const { attempt, job, store, seen, errors } = setup();
    store.failReply = new ScriptLeaseLost('not held');
    expect(await attempt.fail(job, new Error('x'), 10)).toBe('lost');
    expect(seen).toEqual([]);
    expect(errors.map((e) => e.message)).toEqual([expect.stringMatching(/result refused: not held/)]);
  });

  it('an operation that cannot be sent leaves the attempt unsettled and reports the error', async () => {
    const { attempt, job, store, seen, errors } = setup();
    store.ackReply = new Error('connection is closed');
    expect(await attempt.complete(job, 1)).toBe('unsettled');
    expect(seen).toEqual([]);
    expect(errors.map((e) => e.message)).toEqual(['connection is closed']);
  });

  it('refuses a second fate: nothing is sent, the state stays, and the refusal is reported', async () => {
    const { attempt, job, store, errors } = setup();
    const first = attempt.complete(job, 1);
    expect(await attempt.fail(job, new Error('racing'), 10)).toBe('completing');
    expect(await first).toBe('completed');
    expect(await attempt.bury(job, new Error('again'))).toBe('completed');
    expect(await attempt.release('shutdown', 0)).toBe('completed');
    expect(attempt.loseLease('late keeper')).toBe('completed');
    expect(store.calls.map((c) => c[0])).toEqual(['ack']);
    expect(attempt.signal.aborted).toBe(false);
    expect(errors.map((e) => [(e as DelayqError).code, e.message])).toEqual([
      ['DELAYQ_INTERNAL', 'job job-1: fail refused, the attempt is already completing'],
      ['DELAYQ_INTERNAL', 'job job-1: bury refused, the attempt is already completed'],
    ]);
  });

  it('a listener that throws is reported, and the fate stands', async () => {
    const { attempt, job, errors } = setup(true);
    expect(await attempt.complete(job, 1)).toBe('completed');
    expect(errors.map((e) => e.message)).toEqual(['listener broke']);
  });

  it('only a running attempt has transitions: every other state is final or settling', () => {
    const withTransitions = (Object.keys(ALLOWED) as AttemptState[]).filter((s) => ALLOWED[s].length > 0);
    expect(withTransitions).toEqual(['running']);
  });
});
