/**
 * runBatch over real Attempts and a real Exchange, with the script call replaced by a recorder:
 * what each fate sends, and that a resolved batch's acks leave in one call.
 */
import { describe, expect, it } from 'vitest';
import type { ResolvedBackoff } from '../backoff.js';
import { encodeJobPayload, resolveCodec } from '../codec/payload.js';
import {
  CancelledError,
  DelayqError,
  JobTimeoutError,
  LeaseLostError,
  UnrecoverableError,
} from '../errors.js';
import type { AckItem, ClaimedJob, ClaimOutput } from '../operations/claim.js';
import type { FailOutput } from '../operations/fail.js';
import { NEW_JOB_HEADER } from '../record/index.js';
import { SnoozeError } from '../snooze.js';
import { Attempt, type AttemptFail, type AttemptRelease, type AttemptStore } from './attempt.js';
import { Exchange } from './exchange.js';
import { FatePolicy } from './fate.js';
import { RetryPolicy } from './retry-policy.js';
import { runBatch, type BatchHandler } from './run-batch.js';

const codec = resolveCodec('json');

/** The store of a worker whose acks go through an Exchange; the script call is recorded. */
function setup() {
  const exchangeCalls: Array<readonly AckItem[]> = [];
  const fails: AttemptFail[] = [];
  const releases: AttemptRelease[] = [];
  const errors: Error[] = [];
  const events: string[] = [];
  const exchange = new Exchange(async (_limit, acks): Promise<ClaimOutput> => {
    exchangeCalls.push(acks);
    return {
      now: 0,
      nextAt: -1,
      acks: acks.map(() => ({ status: 'ok' })),
      jobs: [],
      unreadable: [],
      paused: false,
    };
  });
  const store: AttemptStore = {
    ackTo: ({ id: _id, ...item }, listener) => exchange.ackTo(item, listener),
    fail: async (input): Promise<FailOutput> => {
      fails.push(input);
      return input.retryDelayMs === null ? { outcome: 'dead', at: 1 } : { outcome: 'retry', at: 1 };
    },
    progress: async () => {},
    log: async () => {},
    release: async (input) => {
      releases.push(input);
      return true;
    },
  };
  const hooks = {
    completed: (job: { id: string }) => events.push(`completed ${job.id}`),
    failed: (job: { id: string }) => events.push(`failed ${job.id}`),
    dead: (_job: unknown, _e: Error, id: string) => events.push(`dead ${id}`),
    released: (id: string, reason: string, _job: unknown, delayMs: number) =>
      events.push(`${reason} ${id} ${delayMs}`),
    error: (err: Error) => errors.push(err),
    settling: () => {},
    extendLease: async () => {},
  };
  const attempt = (id: string, payload: unknown = { id }, backoff?: ResolvedBackoff): Attempt<unknown> => {
    const claimed: ClaimedJob = {
      id,
      member: `1.1000|${id}`,
      token: '1.1000',
      header: {
        ...NEW_JOB_HEADER,
        attempts: 1,
        claims: 1,
        claimedAt: 1_000,
        runDue: 1_000,
        holder: 1,
        ...(backoff && { backoff }),
      },
      payload: encodeJobPayload(codec, id, payload, 1 << 20),
      runAt: 1_000,
      claimedAt: 1_000,
      deadline: 16_000,
    };
    return new Attempt<unknown>(claimed, store, hooks);
  };
  let handlerDone = 0;
  const report = (err: unknown) => void errors.push(err as Error);
  const fates = new FatePolicy(
    new RetryPolicy(undefined, { warn: () => {}, error: () => {} }, 'q'),
    { version: 1, newerVersionDelayMs: 60_000 },
    report,
  );
  const run = (attempts: Array<Attempt<unknown>>, handler: BatchHandler<unknown>, keepResults = false) =>
    runBatch(attempts, {
      handler,
      queue: 'q',
      tracing: null,
      codec,
      options: { version: 1, migrate: {}, schema: undefined, keepResults },
      fates,
      handlerDone: () => void handlerDone++,
      report,
    });
  return { exchangeCalls, fails, releases, errors, events, attempt, run, handlerDone: () => handlerDone };
}

describe('runBatch', () => {
  it('resolving completes every job with one combined ack (one exchange call)', async () => {
    const t = setup();
    const attempts = ['a', 'b', 'c', 'd'].map((id) => t.attempt(id));
    let seen: unknown[] = [];
    await t.run(attempts, async (jobs) => {
      seen = jobs.map((j) => j.payload);
    });
    expect(seen).toEqual([{ id: 'a' }, { id: 'b' }, { id: 'c' }, { id: 'd' }]);
    expect(t.exchangeCalls.map((acks) => acks.map((a) => a.member))).toEqual([
      ['1.1000|a', '1.1000|b', '1.1000|c', '1.1000|d'],
    ]);
    expect(attempts.map((a) => a.state)).toEqual(['completed', 'completed', 'completed', 'completed']);
    expect(t.handlerDone()).toBe(1);
    expect(t.errors).toEqual([]);
  });

  it('throwing fails every job, each by its own backoff', async () => {
    const t = setup();
    const attempts = [
      t.attempt('a', 1, { type: 'fixed', delay: 100 }),
      t.attempt('b', 2, { type: 'fixed', delay: 5_000 }),
    ];
    await t.run(attempts, async () => {
      throw new Error('smtp down');
    });
    expect(t.fails.map((f) => [f.id, f.retryDelayMs, f.error.message])).toEqual([
      ['a', 100, 'smtp down'],
      ['b', 5_000, 'smtp down'],
    ]);
    expect(t.exchangeCalls).toEqual([]);
    expect(t.events).toEqual(['failed a', 'failed b']);
  });

  it('an UnrecoverableError thrown by the handler buries every job at once', async () => {
    const t = setup();
    await t.run([t.attempt('a'), t.attempt('b')], async () => {
      throw new UnrecoverableError('bad batch');
    });
    expect(t.fails.map((f) => [f.id, f.retryDelayMs, f.error.unrecoverable])).toEqual([
      ['a', null, true],
      ['b', null, true],
    ]);
  });

  it('a SnoozeError thrown by the handler snoozes every job: released uncounted after its delay, none failed', async () => {
    const t = setup();
    const attempts = [t.attempt('a'), t.attempt('b')];
    await t.run(attempts, async () => {
      throw new SnoozeError('2s');
    });
    expect(t.releases).toEqual([
      { id: 'a', member: '1.1000|a', delayMs: 2_000, snooze: true },
      { id: 'b', member: '1.1000|b', delayMs: 2_000, snooze: true },
    ]);
    expect(t.fails).toEqual([]);
    expect(t.events).toEqual(['snooze a 2000', 'snooze b 2000']);
    expect(attempts.map((a) => a.state)).toEqual(['released', 'released']);
  });

  it('job.fail(new SnoozeError(ms)) snoozes that job alone; the others complete', async () => {
    const t = setup();
    const attempts = ['a', 'b'].map((id) => t.attempt(id));
    await t.run(attempts, async (jobs) => {
      await jobs[0]!.fail(new SnoozeError(1_500));
    });
    expect(t.releases).toEqual([{ id: 'a', member: '1.1000|a', delayMs: 1_500, snooze: true }]);
    expect(t.exchangeCalls.map((acks) => acks.map((a) => a.member))).toEqual([['1.1000|b']]);
    expect(attempts.map((a) => a.state)).toEqual(['released', 'completed']);
  });

  it('job.fail() fails that job alone, at once; the others complete together', async () => {
    const t = setup();
    const attempts = ['a', 'b', 'c'].map((id) => t.attempt(id));
    let failsDuringHandler = -1;
    await t.run(attempts, async (jobs) => {
      await jobs[1]!.fail(new Error('row 2 is bad'));
      // A second call is the first one's promise: nothing more is sent.
      await jobs[1]!.fail(new Error('again'));
      failsDuringHandler = t.fails.length;
    });
    expect(failsDuringHandler).toBe(1);
    expect(t.fails.map((f) => [f.id, f.error.message])).toEqual([['b', 'row 2 is bad']]);
    expect(t.exchangeCalls.map((acks) => acks.map((a) => a.member))).toEqual([['1.1000|a', '1.1000|c']]);
    expect(attempts.map((a) => a.state)).toEqual(['completed', 'retrying', 'completed']);
    expect(t.errors).toEqual([]);
  });

  it('job.fail() after the handler returned is refused: the batch fate was already sent', async () => {
    const t = setup();
    let kept: Array<{ fail(e: unknown): Promise<void> }> = [];
    await t.run([t.attempt('a')], async (jobs) => {
      kept = jobs;
    });
    await expect(kept[0]!.fail(new Error('too late'))).rejects.toThrow(
      /fail\(\) was called after the batch handler returned/,
    );
    expect(t.fails).toEqual([]);
  });

  it('a job cancelled before the batch ran is left out; one whose lease is lost mid-batch is refused and reported', async () => {
    const t = setup();
    const [a, b, c] = ['a', 'b', 'c'].map((id) => t.attempt(id)) as [
      Attempt<unknown>,
      Attempt<unknown>,
      Attempt<unknown>,
    ];
    a.cancel();
    let ids: string[] = [];
    const signals: boolean[] = [];
    await t.run([a, b, c], async (jobs) => {
      ids = jobs.map((j) => j.id);
      b.loseLease('not renewed in time');
      signals.push(...jobs.map((j) => j.signal.aborted));
    });
    expect(ids).toEqual(['b', 'c']);
    expect(signals).toEqual([true, false]);
    expect(t.exchangeCalls.map((acks) => acks.map((x) => x.member))).toEqual([['1.1000|c']]);
    expect(t.errors.filter((e) => e instanceof LeaseLostError).map((e) => e.message)).toEqual([
      expect.stringMatching(/not renewed in time/),
      expect.stringMatching(/result refused/),
    ]);
    expect(t.errors.some((e) => e instanceof CancelledError)).toBe(false);
  });

  it("a job's timeoutMs aborts its signal and fails it alone; the handler runs on for the others", async () => {
    const t = setup();
    const slow = t.attempt('slow');
    (slow.claimed as { header: ClaimedJob['header'] }).header = { ...slow.claimed.header, timeoutMs: 20 };
    const attempts = [t.attempt('a'), slow];
    let reason: unknown;
    await t.run(attempts, async (jobs) => {
      const job = jobs[1]!;
      await new Promise<void>((resolve) => job.signal.addEventListener('abort', () => resolve()));
      reason = job.signal.reason;
      expect(jobs[0]!.signal.aborted).toBe(false);
    });
    expect(reason).toBeInstanceOf(JobTimeoutError);
    expect(t.fails.map((f) => [f.id, f.error.name])).toEqual([['slow', 'JobTimeoutError']]);
    expect(t.exchangeCalls.map((acks) => acks.map((x) => x.member))).toEqual([['1.1000|a']]);
    expect(attempts.map((a) => a.state)).toEqual(['completed', 'retrying']);
  });

  it('an undecodable payload is buried alone before the call; the rest of the batch runs', async () => {
    const t = setup();
    const bad = t.attempt('bad');
    (bad.claimed as { payload: Buffer }).payload = Buffer.from('{not json');
    let ids: string[] = [];
    await t.run([t.attempt('a'), bad], async (jobs) => {
      ids = jobs.map((j) => j.id);
    });
    expect(ids).toEqual(['a']);
    expect(t.fails.map((f) => [f.id, f.retryDelayMs])).toEqual([['bad', null]]);
    expect(t.exchangeCalls.map((acks) => acks.map((x) => x.member))).toEqual([['1.1000|a']]);
  });

  it('when results are kept, an array with one entry per job gives each job its result; another value is reported', async () => {
    const t = setup();
    await t.run([t.attempt('a'), t.attempt('b')], async () => ['ra', 'rb'], true);
    const kept = t.exchangeCalls[0]!.map(
      (ack) => ack.result && (JSON.parse(ack.result.toString()) as unknown),
    );
    expect(kept).toEqual(['ra', 'rb']);
    await t.run([t.attempt('c'), t.attempt('d')], async () => 'one for all', true);
    expect(t.exchangeCalls[1]!.map((ack) => ack.result)).toEqual([undefined, undefined]);
    expect(t.errors.map((e) => (e as DelayqError).message)).toEqual([
      expect.stringMatching(/keeps results only as an array with one entry per job \(2 here/),
    ]);
  });
});
