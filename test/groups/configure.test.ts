/**
 * Live settings (issue 29): queue.configure({ groups }) changes the recorded group bounds of a
 * running queue, and workers in other processes follow within about a second without a restart;
 * a worker whose option differs from the recorded bound adopts the record with one warning; bad
 * input is refused by name with nothing written.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Queue, ValidationError, Worker } from '../../src/index.js';
import { phase, useWorkerProcesses, type LedgerEntry } from '../support/processes.js';
import { inspector, uniqueQueue, useRedis, waitFor } from '../support/fixtures.js';

const redis = useRedis();
const procs = useWorkerProcesses();
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((c) => c()));
});

function open<T>(name: string): Queue<T> {
  const queue = new Queue<T>(name, { connection: redis.url() });
  closers.push(() => queue.close());
  return queue;
}

async function record(name: string): Promise<Record<string, string>> {
  const r = inspector(redis.url());
  try {
    return await r.hgetall(`dq:{${name}}:config`);
  } finally {
    await r.quit();
  }
}

/** The most handler runs that overlapped in time among those starting at or after `from`. */
function mostOverlapping(entries: readonly LedgerEntry[], from = 0): number {
  const ends = new Map(phase(entries, 'end').map((e) => [`${e.id}/${e.attempt}`, e.end]));
  const events: Array<[number, number]> = [];
  for (const s of phase(entries, 'start')) {
    if (s.start < from) continue;
    events.push([s.start, 1]);
    events.push([ends.get(`${s.id}/${s.attempt}`) ?? Infinity, -1]);
  }
  events.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let now = 0;
  let most = 0;
  for (const [, delta] of events) {
    now += delta;
    most = Math.max(most, now);
  }
  return most;
}

describe('queue.configure', () => {
  it('raises and lowers the group bound; workers in other processes follow within about a second', async () => {
    const name = uniqueQueue('cfg');
    const queue = open<number>(name);
    // Workers that sleep long between claims unless woken: following the change is the message's doing.
    const options = {
      url: redis.url(),
      queue: name,
      concurrency: 4,
      sleepMs: 200,
      groups: { concurrency: 1 },
      maxSleepMs: 30_000,
    };
    const workers = await Promise.all([procs.spawn(options), procs.spawn(options)]);
    const ledger = (): LedgerEntry[] => workers.flatMap((w) => w.ledger());
    await queue.addBulk(
      Array.from({ length: 60 }, (_, i) => ({ payload: i, opts: { id: `j${i}`, group: 'tenant' } })),
    );
    await waitFor(() => phase(ledger(), 'end').length >= 3, { what: 'three runs at the recorded bound' });
    expect(mostOverlapping(ledger())).toBe(1);

    const raisedAt = Date.now();
    await queue.configure({ groups: { concurrency: 3 } });
    expect((await record(name))['groups.concurrency']).toBe('3');
    // Three of the group's jobs run at once, across both processes, soon after the change: the
    // running job's slot did not have to end first.
    await waitFor(() => mostOverlapping(ledger(), raisedAt) === 3, {
      what: 'three of the group running at once',
      timeoutMs: 10_000,
    });
    const third = phase(ledger(), 'start')
      .filter((s) => s.start >= raisedAt)
      .map((s) => s.start)
      .sort((a, b) => a - b)[2]!;
    expect(third - raisedAt).toBeLessThan(1_500);
    expect(mostOverlapping(ledger(), raisedAt)).toBeLessThanOrEqual(3);

    const loweredAt = Date.now();
    await queue.configure({ groups: { concurrency: 1 } });
    const jobs = 60;
    const all = await waitFor(() => (phase(ledger(), 'end').length === jobs ? ledger() : null), {
      what: `${jobs} runs`,
      timeoutMs: 30_000,
    });
    expect(new Set(phase(all, 'start').map((s) => s.id)).size).toBe(jobs);
    // Runs started once those running at the change had ended (200 ms each) and the workers had
    // heard of it (about a second): one at a time again.
    expect(mostOverlapping(all, loweredAt + 1_200)).toBe(1);
  });

  it('a worker with another bound adopts the recorded one, warning once with queue.configure', async () => {
    const name = uniqueQueue('cfg');
    const queue = open<number>(name);
    const first = new Worker(name, async () => {}, { connection: redis.url(), groups: { concurrency: 3 } });
    closers.push(() => first.close());
    await first.waitUntilReady();
    const warnings: string[] = [];
    const logger = { info: () => {}, warn: (m: string) => void warnings.push(m), error: () => {} };
    const running: number[] = [];
    let most = 0;
    const second = new Worker<number>(
      name,
      async () => {
        running.push(1);
        most = Math.max(most, running.length);
        await new Promise((r) => setTimeout(r, 100));
        running.pop();
      },
      { connection: redis.url(), concurrency: 5, groups: { concurrency: 2 }, logger },
    );
    closers.push(() => second.close());
    await second.waitUntilReady();
    await first.close();
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(
      /records groups\.concurrency: 3.*its own groups\.concurrency: 2.*queue\.configure/,
    );
    await queue.addBulk(Array.from({ length: 9 }, (_, i) => ({ payload: i, opts: { group: 'g' } })));
    await waitFor(async () => (await queue.counts()).scheduled === 0 && running.length === 0, {
      what: 'all run',
    });
    // The recorded bound, not the worker's own.
    expect(most).toBe(3);
    expect((await record(name))['groups.concurrency']).toBe('3');
  });

  it('a producer opened before the change follows the raised bound too (its adds read it again)', async () => {
    const name = uniqueQueue('cfg');
    const stale = open<number>(name);
    const running = new Set<number>();
    let most = 0;
    let release = (): void => {};
    const held = new Promise<void>((r) => (release = r));
    const worker = new Worker<number>(
      name,
      async (job) => {
        running.add(job.payload);
        most = Math.max(most, running.size);
        await held;
        running.delete(job.payload);
      },
      { connection: redis.url(), concurrency: 5, groups: { concurrency: 1 } },
    );
    closers.push(async () => {
      release();
      await worker.close();
    });
    await worker.waitUntilReady();
    // The producer settles with concurrency 1 recorded, then another client raises it.
    await stale.add(0, { group: 'g' });
    await waitFor(() => running.size === 1, { what: 'job 0 running' });
    await open<number>(name).configure({ groups: { concurrency: 3 } });
    // The stale producer keeps adding: within about a second its adds pass the new bound, and
    // two more of the group run beside job 0 (which holds its slot throughout).
    let next = 1;
    await waitFor(
      async () => {
        await stale.add(next++, { group: 'g' });
        return running.size === 3;
      },
      { what: 'three of the group running', timeoutMs: 10_000, intervalMs: 200 },
    );
    expect(most).toBe(3);
    expect(running.has(0)).toBe(true);
  });

  it('refuses unknown keys and values out of range by name, writing nothing', async () => {
    const name = uniqueQueue('cfg');
    const queue = open<number>(name);
    await queue.configure({ groups: { concurrency: 2, limit: { max: 5, per: '1s' } } });
    const before = await record(name);
    expect(before).toMatchObject({
      'groups.concurrency': '2',
      'groups.limit': '5/1000',
      'settings.version': '1',
    });
    const cases: Array<[unknown, RegExp]> = [
      [
        { groups: { concurrency: 0 } },
        /groups\.concurrency must be a whole number from 1 to 1000000, got number 0/,
      ],
      [{ groups: { concurrency: 2.5 } }, /groups\.concurrency must be a whole number/],
      [
        { groups: { concurency: 2 } },
        /unknown configure option 'groups\.concurency'; known: groups\.concurrency, groups\.limit/,
      ],
      [{ codec: 'msgpack' }, /unknown configure option 'codec'.*cannot change once recorded/],
      [{}, /configure needs something to change/],
      [{ groups: {} }, /needs concurrency or limit/],
      [{ groups: { limit: { max: 0, per: '1s' } } }, /groups\.limit\.max must be a whole number >= 1/],
      [{ groups: { limit: { max: 1, per: 'soon' } } }, /groups\.limit\.per/],
      [null, /configure takes \{ groups/],
    ];
    for (const [options, message] of cases) {
      const err = await queue.configure(options as never).catch((e: unknown) => e);
      expect(err, JSON.stringify(options)).toBeInstanceOf(ValidationError);
      expect((err as Error).message).toMatch(message);
    }
    expect(await record(name)).toEqual(before);
    // limit: null removes the rate limit and keeps the concurrency.
    await queue.configure({ groups: { limit: null } });
    expect(await record(name)).toMatchObject({
      'groups.concurrency': '2',
      'groups.limit': 'none',
      'settings.version': '2',
    });
  });
});
