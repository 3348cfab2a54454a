/**
 * job.log() against a real redis-server (issue 33): lines shown by queue.get() with their attempt,
 * while the job runs and after it ended; capped per attempt and per job, a line over a cap refused
 * with nothing written; fenced by the lease member; kept while the job's record is kept and
 * deleted with it (trim, dead.remove, and trim's sweep for a record that went another way); lines
 * of an earlier job of the same id never shown as the new job's.
 */
import type { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import {
  LeaseLostError,
  LogLimitError,
  Queue,
  ValidationError,
  Worker,
  type BatchJob,
  type Job,
} from '../../src/index.js';
import { writeLog } from '../../src/operations/log.js';
import { trim } from '../../src/operations/trim.js';
import { queueKeys } from '../../src/redis/keys.js';
import { ScriptBadArg, ScriptLeaseLost } from '../../src/redis/script-errors.js';
import { inspector, uniqueQueue, useRedis, waitFor } from '../support/fixtures.js';

const redis = useRedis();
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

function client(): Redis {
  const c = inspector(redis.url());
  closers.push(async () => void (await c.quit()));
  return c;
}

function queueOf<T>(name: string): Queue<T> {
  const queue = new Queue<T>(name, { connection: redis.url() });
  closers.push(() => queue.close());
  return queue;
}

function workerOf<T>(name: string, handler: (job: Job<T>) => Promise<unknown>, keep = true): Worker<T> {
  const worker = new Worker<T>(name, handler, {
    connection: redis.url(),
    ...(keep && { keepCompleted: { count: 100, age: '1h' } }),
  });
  closers.push(() => worker.close({ timeoutMs: 2_000 }));
  return worker;
}

/** A gate the test opens to let a handler finish. */
function gate(): { wait: Promise<void>; open: () => void } {
  let open = () => {};
  const wait = new Promise<void>((resolve) => (open = resolve));
  return { wait, open };
}

const lines = (logs: Array<{ attempt: number; line: string }> | undefined) =>
  (logs ?? []).map((l) => `${l.attempt}: ${l.line}`);

describe('job.log', () => {
  it('shows a running job’s lines in get(), and keeps them once it completed', async () => {
    const name = uniqueQueue('log');
    const queue = queueOf<string>(name);
    const release = gate();
    workerOf<string>(name, async (job) => {
      await job.log('fetched 3 files');
      await job.log('tab\tand ünïcödé are fine');
      await release.wait;
      return 'done';
    });
    const { id } = await queue.add('x');
    const running = await waitFor(async () => {
      const info = await queue.get(id);
      return info?.state === 'active' && info.logs?.length === 2 ? info : null;
    });
    expect(lines(running.logs)).toEqual(['1: fetched 3 files', '1: tab\tand ünïcödé are fine']);
    expect(running.logs![0]!.at).toBeInstanceOf(Date);
    expect(Math.abs(running.logs![0]!.at.getTime() - Date.now())).toBeLessThan(60_000);
    release.open();
    const done = await waitFor(async () => {
      const info = await queue.get(id);
      return info?.state === 'completed' ? info : null;
    });
    expect(lines(done.logs)).toEqual(['1: fetched 3 files', '1: tab\tand ünïcödé are fine']);
    // Pages of jobs do not read the lines.
    const [listed] = await queue.list('completed');
    expect(listed?.id).toBe(id);
    expect(listed && 'logs' in listed).toBe(false);
  });

  it('tells attempts apart, and keeps a dead job’s lines', async () => {
    const name = uniqueQueue('log');
    const queue = queueOf<string>(name);
    workerOf<string>(name, async (job) => {
      await job.log(`attempt ${job.attempt} starts`);
      throw new Error(`boom ${job.attempt}`);
    });
    const { id } = await queue.add('x', { attempts: 2, backoff: { type: 'fixed', delay: 5 } });
    const dead = await waitFor(async () => {
      const info = await queue.get(id);
      return info?.state === 'dead' ? info : null;
    });
    expect(lines(dead.logs)).toEqual(['1: attempt 1 starts', '2: attempt 2 starts']);
    expect((await queue.get('no-such-job'))?.logs).toBeUndefined();
  });

  it('a job without lines shows an empty list, and no log key is ever written for it', async () => {
    const name = uniqueQueue('log');
    const queue = queueOf<string>(name);
    workerOf<string>(name, async () => 'ok');
    const { id } = await queue.add('x');
    const done = await waitFor(async () => {
      const info = await queue.get(id);
      return info?.state === 'completed' ? info : null;
    });
    expect(done.logs).toEqual([]);
    expect(await client().exists(queueKeys(name).logs)).toBe(0);
  });

  it('refuses a line over a cap with a typed error, writing nothing', async () => {
    const name = uniqueQueue('log');
    const queue = queueOf<string>(name);
    const keys = queueKeys(name);
    const c = client();
    const seen: unknown[] = [];
    let before: Buffer | null = null;
    workerOf<string>(name, async (job) => {
      for (let i = 1; i <= 20; i++) await job.log(`line ${i}`);
      before = await c.dumpBuffer(keys.logs);
      for (const bad of ['y'.repeat(513), 'two\nlines', 'line 21']) {
        try {
          await job.log(bad);
        } catch (err) {
          seen.push(err);
        }
      }
      return 'ok';
    });
    const { id } = await queue.add('x');
    const done = await waitFor(async () => {
      const info = await queue.get(id);
      return info?.state === 'completed' ? info : null;
    });
    expect(seen[0]).toBeInstanceOf(LogLimitError);
    expect(seen[0]).toMatchObject({ cap: 'line-bytes', size: 513, limit: 512 });
    expect(seen[1]).toBeInstanceOf(ValidationError);
    expect(seen[2]).toBeInstanceOf(LogLimitError);
    expect(seen[2]).toMatchObject({ cap: 'lines', limit: 20 });
    expect((seen[2] as Error).message).toMatch(/has written its 20 log lines for this attempt/);
    expect(await c.dumpBuffer(keys.logs)).toEqual(before);
    expect(done.logs).toHaveLength(20);
  });

  it('keeps the newest 50 lines of a job: a later attempt pushes out the oldest attempt’s first', async () => {
    const name = uniqueQueue('log');
    const queue = queueOf<string>(name);
    workerOf<string>(name, async (job) => {
      for (let i = 1; i <= 20; i++) await job.log(`a${job.attempt} l${i}`);
      if (job.attempt < 3) throw new Error('again');
      return 'ok';
    });
    const { id } = await queue.add('x', { attempts: 3, backoff: { type: 'fixed', delay: 5 } });
    const done = await waitFor(async () => {
      const info = await queue.get(id);
      return info?.state === 'completed' ? info : null;
    });
    expect(done.logs).toHaveLength(50);
    expect(done.logs![0]!.line).toBe('a1 l11');
    expect(done.logs!.at(-1)!.line).toBe('a3 l20');
    expect(done.logs!.filter((l) => l.attempt === 3)).toHaveLength(20);
  });

  it('works on the jobs of a batch, each its own', async () => {
    const name = uniqueQueue('log');
    const queue = queueOf<number>(name);
    const worker = new Worker<number>(
      name,
      async (jobs: Array<BatchJob<number>>) => {
        await Promise.all(jobs.map((job) => job.log(`row ${job.payload} of ${jobs.length}`)));
      },
      { connection: redis.url(), batch: { size: 3, waitMs: 50 }, keepCompleted: { count: 10, age: '1h' } },
    );
    closers.push(() => worker.close({ timeoutMs: 2_000 }));
    const added = await queue.addBulk([1, 2, 3].map((payload) => ({ payload })));
    for (const [i, { id }] of added.entries()) {
      const done = await waitFor(async () => {
        const info = await queue.get(id);
        return info?.state === 'completed' ? info : null;
      });
      expect(done.logs?.map((l) => l.line)).toEqual([
        expect.stringMatching(new RegExp(`^row ${i + 1} of \\d$`)),
      ]);
    }
  });

  it('is fenced: a member that holds no lease cannot write, and log.lua holds the caps for any caller', async () => {
    const name = uniqueQueue('log');
    const keys = queueKeys(name);
    const c = client();
    await expect(
      writeLog(c, keys, { member: `1.${Date.now()}|ghost`, attempt: 1, line: 'x' }),
    ).rejects.toBeInstanceOf(ScriptLeaseLost);
    await expect(
      writeLog(c, keys, { member: `1.${Date.now()}|ghost`, attempt: 1, line: 'z'.repeat(513) }),
    ).rejects.toBeInstanceOf(ScriptBadArg);
    expect(await c.exists(keys.logs)).toBe(0);
  });

  it('a handler whose lease was lost gets LeaseLostError from job.log', async () => {
    const name = uniqueQueue('log');
    const queue = queueOf<string>(name);
    const keys = queueKeys(name);
    const c = client();
    const outcome: unknown[] = [];
    const taken = gate();
    const release = gate();
    workerOf<string>(name, async (job) => {
      taken.open();
      await release.wait;
      try {
        await job.log('too late');
      } catch (err) {
        outcome.push(err);
      }
    });
    await queue.add('x', { id: 'held' });
    await taken.wait;
    // Another process took the lease away (as a reap after expiry would).
    await c.del(keys.leases);
    release.open();
    await waitFor(() => outcome.length === 1, { what: 'the refused log' });
    expect(outcome[0]).toBeInstanceOf(LeaseLostError);
    expect(await c.hexists(keys.logs, 'held')).toBe(0);
  });
});

describe('job.log lines live as long as the record', () => {
  async function completedWithLines(name: string, id: string): Promise<void> {
    const queue = queueOf<string>(name);
    workerOf<string>(name, async (job) => {
      await job.log(`line of ${job.id}`);
      if (job.id.startsWith('dies')) throw new Error('dead');
      return 'ok';
    });
    await queue.add('x', { id, attempts: 1 });
    await waitFor(async () => {
      const info = await queue.get(id);
      return info && (info.state === 'completed' || info.state === 'dead') && info.logs?.length === 1;
    });
  }

  it('trim deletes a trimmed completed job’s lines with its record', async () => {
    const name = uniqueQueue('log');
    await completedWithLines(name, 'done-1');
    const keys = queueKeys(name);
    const c = client();
    expect(await c.hexists(keys.logs, 'done-1')).toBe(1);
    const out = await trim(c, keys, {
      completed: { count: 0, ageMs: 1 },
      cancelled: { count: 0, ageMs: 0 },
      dead: { count: 0, ageMs: 0 },
    });
    expect(out.completed).toBe(1);
    expect(await c.hexists(keys.records, 'done-1')).toBe(0);
    expect(await c.exists(keys.logs)).toBe(0);
  });

  it('dead.remove deletes a dead job’s lines', async () => {
    const name = uniqueQueue('log');
    await completedWithLines(name, 'dies-1');
    const keys = queueKeys(name);
    const c = client();
    expect(await c.hexists(keys.logs, 'dies-1')).toBe(1);
    expect(await queueOf(name).dead.remove('dies-1')).toBe(true);
    expect(await c.exists(keys.logs)).toBe(0);
  });

  it('trim’s sweep drops lines whose record went by a path that does not know them, a bounded part per call', async () => {
    const name = uniqueQueue('log');
    await completedWithLines(name, 'kept');
    const keys = queueKeys(name);
    const c = client();
    // 1,000 orphans (a dead job dropped when a claim bounded the dead set deletes its record alone):
    // more than a small hash (a listpack, which HSCAN returns whole: 512 entries by default) holds.
    const packed = (await c.hgetBuffer(keys.logs, 'kept'))!;
    const orphans = Array.from({ length: 1000 }, (_, i) => [`orphan-${i}`, packed]).flat();
    await c.hset(keys.logs, ...orphans);
    const none = { count: 0, ageMs: 0 };
    let swept = 0;
    let calls = 0;
    while ((await c.hlen(keys.logs)) > 1 || (await c.hexists(keys.logs, '\0')) === 1) {
      const out = await trim(c, keys, { completed: none, cancelled: none, dead: none });
      // One call looks at a bounded part of lg (LOG_SWEEP, HSCAN's COUNT: a few more at most).
      expect(out.logs).toBeLessThanOrEqual(100);
      swept += out.logs;
      calls++;
      expect(calls).toBeLessThan(200);
    }
    expect(swept).toBe(1000);
    expect(calls).toBeGreaterThan(3);
    expect(await c.hkeys(keys.logs)).toEqual(['kept']);
  });

  /** A job that completed with two lines, then its id added again (onExists: 'replace'). */
  async function createdAgain(name: string, release: Promise<void>) {
    const queue = queueOf<string>(name);
    let runs = 0;
    workerOf<string>(name, async (job) => {
      runs++;
      if (runs === 1) {
        await job.log('old job, line 1');
        await job.log('old job, line 2');
        return 'ok';
      }
      await release;
      await job.log('new job');
      return 'ok';
    });
    await queue.add('x', { id: 'again' });
    await waitFor(async () => (await queue.get('again'))?.logs?.length === 2);
    expect((await queue.add('y', { id: 'again', onExists: 'replace', delay: '1h' })).created).toBe(true);
    return queue;
  }

  it('an earlier job’s lines are not shown as those of a new job of the same id that has not run', async () => {
    const queue = await createdAgain(uniqueQueue('log'), new Promise(() => {}));
    const waiting = (await queue.get('again'))!;
    expect(waiting.state).toBe('scheduled');
    expect(waiting.logs).toEqual([]);
  });

  // add.lua deletes the old job's lines when it creates the id again; the claim count goes on
  // from the old job's (fencing), so without that the old lines would read as an earlier run's.
  it('an earlier job’s lines are not shown as those of a new job of the same id once it ran', async () => {
    const name = uniqueQueue('log');
    let open = () => {};
    const queue = await createdAgain(name, new Promise<void>((resolve) => (open = resolve)));
    await queue.reschedule('again', { delay: 0 });
    open();
    const done = await waitFor(async () => {
      const info = await queue.get('again');
      return info?.state === 'completed' && info.logs?.some((l) => l.line === 'new job') ? info : null;
    });
    expect(lines(done.logs)).toEqual(['1: new job']);
  });
});
