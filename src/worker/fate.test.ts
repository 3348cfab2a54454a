/**
 * The fate policy (fate.ts): every outcome maps to the fate single jobs and batches share, and
 * send() applies it through the attempt's transitions.
 */
import { describe, expect, it } from 'vitest';
import { UnrecoverableError, UnsupportedVersionError } from '../errors.js';
import type { ClaimedJob } from '../operations/claim.js';
import { Job } from '../job.js';
import { NEW_JOB_HEADER } from '../record/index.js';
import { SnoozeError } from '../snooze.js';
import { Attempt, type AttemptFail, type AttemptRelease, type AttemptStore } from './attempt.js';
import { FatePolicy, NEWER_VERSION, RESOLVED } from './fate.js';
import { RetryPolicy } from './retry-policy.js';

const quiet = { warn: () => {}, error: () => {} };

function claimedJob(attempts: number, backoff?: { type: 'fixed'; delay: number }): ClaimedJob {
  return {
    id: 'j1',
    member: '1.1000|j1',
    token: '1.1000',
    header: { ...NEW_JOB_HEADER, attempts, maxAttempts: 5, ...(backoff && { backoff }) },
    payload: Buffer.from('1'),
    runAt: 1_000,
    claimedAt: 1_000,
    deadline: 31_000,
  };
}

function setup() {
  const reports: unknown[] = [];
  const policy = new FatePolicy(
    new RetryPolicy({ type: 'fixed', delay: 250 }, quiet, 'q'),
    { version: 2, newerVersionDelayMs: 60_000 },
    (err) => reports.push(err),
  );
  const fails: AttemptFail[] = [];
  const releases: AttemptRelease[] = [];
  const store: AttemptStore = {
    ackTo: () => {},
    progress: async () => {},
    log: async () => {},
    fail: async (input) => (
      fails.push(input),
      { outcome: input.retryDelayMs === null ? 'dead' : 'retry', at: 9 }
    ),
    release: async (input) => (releases.push(input), true),
  };
  const hooks = {
    completed: () => {},
    failed: () => {},
    dead: () => {},
    released: () => {},
    error: (err: Error) => void reports.push(err),
    settling: () => {},
    extendLease: async () => {},
  };
  const attempt = (claimed = claimedJob(1)) => new Attempt<unknown>(claimed, store, hooks);
  return { policy, reports, fails, releases, attempt };
}

describe('FatePolicy.decide', () => {
  const { policy } = setup();
  const claimed = claimedJob(2);

  it('a resolved handler completes', () => {
    expect(policy.decide(RESOLVED, claimed)).toStrictEqual({ kind: 'complete' });
  });

  it('a thrown error fails the attempt, retried after the backoff; a job-level backoff wins', () => {
    const error = new Error('boom');
    expect(policy.decide({ kind: 'threw', error }, claimed)).toStrictEqual({
      kind: 'fail',
      error,
      retryDelayMs: 250,
    });
    const own = claimedJob(2, { type: 'fixed', delay: 40 });
    expect(policy.decide({ kind: 'threw', error }, own)).toMatchObject({ kind: 'fail', retryDelayMs: 40 });
  });

  it('a SnoozeError snoozes for its delay, whatever attempts are left', () => {
    expect(policy.decide({ kind: 'threw', error: new SnoozeError('30s') }, claimed)).toStrictEqual({
      kind: 'snooze',
      delayMs: 30_000,
    });
  });

  it('an UnrecoverableError buries at once; anything thrown that is not an Error becomes one', () => {
    const error = new UnrecoverableError('no point');
    expect(policy.decide({ kind: 'threw', error }, claimed)).toStrictEqual({ kind: 'bury', error });
    const fate = policy.decide({ kind: 'threw', error: 'plain string' }, claimed);
    expect(fate).toMatchObject({ kind: 'fail' });
    expect(fate.kind === 'fail' && fate.error.message).toBe('plain string');
  });

  it('an unreadable payload is buried; a newer payload version is released after the delay', () => {
    const error = new Error('bad payload');
    expect(policy.decide({ kind: 'unreadable', error }, claimed)).toStrictEqual({ kind: 'bury', error });
    expect(policy.decide(NEWER_VERSION, claimed)).toStrictEqual({
      kind: 'release',
      reason: 'newer-version',
      delayMs: 60_000,
    });
  });
});

describe('FatePolicy.send', () => {
  it('fail and bury go to fail.lua with the delay, or none', async () => {
    const t = setup();
    expect(await t.policy.settle(t.attempt(), null, { kind: 'threw', error: new Error('x') })).toBe(
      'retrying',
    );
    expect(await t.policy.settle(t.attempt(), null, { kind: 'unreadable', error: new Error('y') })).toBe(
      'buried',
    );
    expect(t.fails.map((f) => f.retryDelayMs)).toStrictEqual([250, null]);
  });

  it('a release to a newer version is reported; a snooze is released quietly after its delay', async () => {
    const t = setup();
    expect(await t.policy.settle(t.attempt(claimedJob(1)), null, NEWER_VERSION)).toBe('released');
    const attempt = t.attempt();
    const { claimed } = attempt;
    const job = new Job<unknown>(
      claimed.id,
      1,
      1,
      5,
      new Date(claimed.runAt),
      new Date(claimed.claimedAt),
      attempt,
    );
    expect(await t.policy.settle(attempt, job, { kind: 'threw', error: new SnoozeError(5_000) })).toBe(
      'released',
    );
    expect(t.releases.map((r) => [r.delayMs, r.snooze])).toStrictEqual([
      [60_000, undefined],
      [5_000, true],
    ]);
    expect(t.reports).toHaveLength(1);
    expect(t.reports[0]).toBeInstanceOf(UnsupportedVersionError);
  });

  it("a snooze without the handler's job is refused", async () => {
    const t = setup();
    await expect(t.policy.send(t.attempt(), null, { kind: 'snooze', delayMs: 5 })).rejects.toThrow(
      /without its job/,
    );
  });
});
