/**
 * `delayq migrate` (docs/ARCHITECTURE.md §10): a queue written by delayq 0.1's own scripts
 * (test/fixtures/layout1) is refused by every layout-2 client, then converted in place; every job
 * keeps its state, due time, attempts and error, and runs on from there.
 */
import type { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { Queue, UnsupportedLayoutError, Worker } from '../../src/index.js';
import { Inspector } from '../../src/inspect/inspector.js';
import { migrateQueue, MigrateRefusedError, type MigrateOptions } from '../../src/migrate/migrate.js';
import { migrationCodec } from '../../src/migrate/codecs.js';
import { payloadConverter, templateConverter } from '../../src/migrate/payloads.js';
import { jsonCodec } from '../../src/codec/json.js';
import { configKey, legacyKeys, partitionKeys } from '../../src/redis/keys.js';
import { Scheduler } from '../../src/scheduler.js';
import { Layout1Queue, seedEveryState } from '../fixtures/layout1/index.js';
import { inspector, uniqueQueue, useRedis, waitFor } from '../support/fixtures.js';

const redis = useRedis();
const closers: Array<() => Promise<unknown>> = [];

afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

function client(): Redis {
  const c = inspector(redis.url());
  closers.push(() => c.quit());
  return c;
}

function queue<T>(name: string, partitions = 1): Queue<T> {
  const q = new Queue<T>(name, { connection: redis.url(), partitions });
  closers.push(() => q.close());
  return q;
}

function worker<T>(
  name: string,
  handler: (id: string, payload: T, attempt: number) => void,
  partitions = 1,
): Worker<T> {
  const w = new Worker<T>(name, async (job) => handler(job.id, job.payload, job.attempt), {
    connection: redis.url(),
    partitions,
    leaseMs: 5_000,
  });
  w.on('error', () => {});
  closers.push(() => w.close());
  return w;
}

/** The json codec's two halves: 0.1's envelopes in, layout-2 payloads out. */
const json = migrationCodec(jsonCodec);

function options(extra: Partial<MigrateOptions> = {}): MigrateOptions {
  return {
    who: 'migrate.test',
    resume: false,
    dryRun: false,
    yes: true,
    payloads: payloadConverter(json.envelopes, json.payloads),
    templates: templateConverter(json.envelopes, json.payloads),
    ...extra,
  };
}

/** Every key of queue `name` (all partitions) with its content, to show what a step wrote. */
async function dump(c: Redis, name: string): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  for (const key of (await c.keys(`dq:{${name}*`)).sort()) {
    const type = await c.type(key);
    if (type === 'string') out[key] = await c.get(key);
    else if (type === 'hash') out[key] = await c.hgetall(key);
    else if (type === 'zset') out[key] = await c.zrange(key, 0, -1, 'WITHSCORES');
    else if (type === 'list') out[key] = await c.lrange(key, 0, -1);
    else if (type === 'stream') out[key] = (await c.xrange(key, '-', '+')).length;
    else out[key] = type;
  }
  return out;
}

async function rejection(call: Promise<unknown>): Promise<unknown> {
  return call.then(
    () => null,
    (e: unknown) => e,
  );
}

describe('a layout-1 queue', () => {
  it('is refused by every layout-2 client with a message naming delayq migrate, and nothing is written', async () => {
    const name = uniqueQueue('mig');
    const c = client();
    const old = new Layout1Queue(c, name);
    await seedEveryState(old);
    const before = await dump(c, name);

    const err = await rejection(queue(name).add({ n: 'new' }));
    expect(err).toBeInstanceOf(UnsupportedLayoutError);
    expect((err as Error).message).toBe(
      `queue '${name}' is in layout 1 (delayq 0.1); stop its workers and producers and run \`delayq migrate ${name}\` to convert it in place`,
    );
    expect(await rejection(worker(name, () => {}).waitUntilReady())).toBeInstanceOf(UnsupportedLayoutError);
    expect(await rejection(Inspector.open(c, name))).toBeInstanceOf(UnsupportedLayoutError);
    expect(await dump(c, name)).toEqual(before);
  });

  it('without a config record (before 0.1 wrote one) is refused too', async () => {
    const name = uniqueQueue('mig');
    const c = client();
    const old = new Layout1Queue(c, name);
    await old.add('a', { n: 1 }, { delayMs: 60_000 });
    expect(await c.exists(configKey(name))).toBe(0);
    expect(await rejection(queue(name).add({ n: 2 }))).toBeInstanceOf(UnsupportedLayoutError);
    expect(await c.exists(configKey(name))).toBe(0);
  });
});

describe('delayq migrate', () => {
  it('refuses while a 0.1 worker seems at work, unless told to go on; a dry run writes nothing', async () => {
    const name = uniqueQueue('mig');
    const c = client();
    const old = new Layout1Queue(c, name);
    await seedEveryState(old);
    const before = await dump(c, name);
    const refused = await rejection(migrateQueue(c, name, options({ yes: false })));
    expect(refused).toBeInstanceOf(MigrateRefusedError);
    expect((refused as Error).message).toMatch(/1 job is running under a valid lease/);
    const dry = await migrateQueue(c, name, options({ dryRun: true }));
    expect(dry).toMatchObject({
      status: 'dry-run',
      jobs: { waiting: 4, active: 2, dead: 1, completed: 2, cancelled: 1 },
      problems: [],
      schedules: { converted: 1, problems: [] },
    });
    expect(await dump(c, name)).toEqual(before);
  });

  it('converts every state in place; get() shows each as it was, and the queue runs on from there', async () => {
    const name = uniqueQueue('mig');
    const c = client();
    const old = new Layout1Queue(c, name);
    const { dues, occurrence: first, everyMs } = await seedEveryState(old);

    const report = await migrateQueue(c, name, options());
    expect(report).toMatchObject({
      status: 'migrated',
      jobs: { waiting: 4, active: 2, dead: 1, completed: 2, cancelled: 1 },
      problems: [],
      schedules: { converted: 1, problems: [] },
    });
    // Nothing of layout 1 is left; the record says format 2 and nobody migrates any more.
    const k = legacyKeys(name);
    expect(
      await c.exists(
        k.schedule,
        k.jobs,
        k.meta,
        k.active,
        k.leases,
        k.token,
        k.dead,
        k.errors,
        k.completed,
        k.done,
        k.events,
      ),
    ).toBe(0);
    expect(await c.hget(configKey(name), 'format')).toBe('2');
    expect(await c.hexists(configKey(name), 'migrating')).toBe(0);
    // A second run has nothing to do.
    expect((await migrateQueue(c, name, options())).status).toBe('already');

    const q = queue<{ n: string }>(name);
    expect(await q.get('scheduled')).toMatchObject({
      state: 'scheduled',
      attempts: 0,
      maxAttempts: 5,
      payload: { n: 'scheduled' },
    });
    expect((await q.get('scheduled'))?.runAt.getTime()).toBe(dues['scheduled']);
    expect((await q.get('immediate'))?.runAt.getTime()).toBe(dues['immediate']);
    expect(await q.get('retrying')).toMatchObject({
      state: 'scheduled',
      attempts: 1,
      lastError: { message: 'try later' },
    });
    expect((await q.get('retrying'))?.runAt.getTime()).toBe(dues['retrying']);
    expect(await q.get('valid')).toMatchObject({ state: 'active', attempts: 1, payload: { n: 'valid' } });
    expect(await q.get('dead')).toMatchObject({ state: 'dead', attempts: 1, lastError: { message: 'boom' } });
    expect(await q.get('completed')).toMatchObject({ state: 'completed' });
    expect(await q.get('gone')).toMatchObject({ state: 'completed' });
    expect(await q.get('cancelled')).toMatchObject({ state: 'cancelled' });
    // An add of a completed or cancelled id is still answered from its record, as `done` did.
    expect(await q.add({ n: 'again' }, { id: 'gone' })).toMatchObject({ created: false });

    // A worker runs the due job, reaps the expired lease and runs that job again (attempt 2), and
    // leaves the job under a valid lease alone.
    const ran: Array<[string, number]> = [];
    const w = worker<{ n: string }>(name, (id, _payload, attempt) => void ran.push([id, attempt]));
    await waitFor(() => ran.some(([id]) => id === 'immediate') && ran.some(([id]) => id === 'expired'), {
      what: 'the due and the reaped job to run',
    });
    expect(ran).toContainEqual(['expired', 2]);
    expect(ran.filter(([id]) => id === 'valid')).toEqual([]);
    // dead.retry puts the dead job back, and it runs.
    expect(await q.dead.retry('dead')).toBeTruthy();
    await waitFor(() => ran.some(([id]) => id === 'dead'), { what: 'the retried dead job to run' });
    await w.close();

    // Declared again as 0.1 declared it: the migrated definition is the same, so nothing changes.
    expect((await q.schedule('tick', { every: everyMs }, { n: 'tick' })).status).toBe('unchanged');
    // The schedule goes on after its migrated mark: the occurrences it adds are all later than the
    // one 0.1 added, which is not added again.
    const scheduler = new Scheduler(q);
    await scheduler.start();
    closers.push(() => scheduler.stop());
    await waitFor(() => scheduler.stats.added >= 1, { what: 'the next occurrence' });
    const dueOf = (id: string): number => Number(id.slice('tick@'.length));
    const ids = Object.keys(await c.hgetall(partitionKeys(name, 1)[0]!.records)).filter((id) =>
      id.startsWith('tick@'),
    );
    expect(ids).toContain(first);
    expect(ids.filter((id) => id !== first).every((id) => dueOf(id) > dueOf(first))).toBe(true);
    expect(ids.length).toBeGreaterThan(1);
  });

  it('killed midway: clients are refused meanwhile, and --resume finishes with every job once', async () => {
    const name = uniqueQueue('mig');
    const c = client();
    const old = new Layout1Queue(c, name);
    await old.record();
    const ids = Array.from({ length: 25 }, (_, i) => `j${i}`);
    for (const id of ids) await old.add(id, { id }, { delayMs: 3_600_000 });

    const killed = await rejection(
      migrateQueue(
        c,
        name,
        options({
          chunk: 4,
          onProgress: (p) => {
            if (p.done >= 8) throw new Error('killed');
          },
        }),
      ),
    );
    expect((killed as Error).message).toBe('killed');
    // Partly converted: some jobs in each layout, none in both.
    const k = legacyKeys(name);
    const current = partitionKeys(name, 1)[0]!;
    const left = await c.zcard(k.schedule);
    expect(left).toBeGreaterThan(0);
    expect(left + (await c.zcard(current.waiting))).toBe(ids.length);

    const err = await rejection(queue(name).add({ id: 'new' }));
    expect(err).toBeInstanceOf(UnsupportedLayoutError);
    expect((err as Error).message).toMatch(
      new RegExp(
        `^queue '${name}' is in layout 1 \\(delayq 0\\.1\\) and being migrated since \\d{4}-.+ by migrate\\.test`,
      ),
    );
    // A second migrate does not run over the first; --resume takes over.
    expect(await rejection(migrateQueue(c, name, options()))).toBeInstanceOf(UnsupportedLayoutError);
    const resumed = await migrateQueue(c, name, options({ resume: true, chunk: 4 }));
    expect(resumed).toMatchObject({ status: 'migrated', jobs: { waiting: left } });
    expect(await c.zcard(current.waiting)).toBe(ids.length);
    const q = queue<{ id: string }>(name);
    for (const id of ids) expect(await q.get(id)).toMatchObject({ state: 'scheduled', payload: { id } });
  });

  it('a partitioned queue: every partition converted, each job where its id says', async () => {
    const name = uniqueQueue('mig');
    const c = client();
    const old = new Layout1Queue(c, name, 3);
    await old.record();
    const ids = Array.from({ length: 12 }, (_, i) => `p${i}`);
    for (const id of ids) await old.add(id, { id });
    await old.add('later', { id: 'later' }, { delayMs: 3_600_000 });

    const report = await migrateQueue(c, name, options());
    expect(report).toMatchObject({ status: 'migrated', partitions: 3, jobs: { waiting: 13 } });
    for (const [i, keys] of partitionKeys(name, 3).entries()) {
      expect(await c.exists(legacyKeys(name, i).jobs, legacyKeys(name, i).schedule)).toBe(0);
      expect(await c.hlen(keys.records)).toBe(await c.zcard(keys.waiting));
    }
    const q = queue<{ id: string }>(name, 3);
    expect(await q.get('later')).toMatchObject({ state: 'scheduled', payload: { id: 'later' } });
    const ran = new Set<string>();
    worker<{ id: string }>(name, (id) => void ran.add(id), 3);
    await waitFor(() => ran.size === ids.length, { what: 'every due job to run' });
    expect([...ran].sort()).toEqual([...ids].sort());
  });

  it('a job whose envelope does not decode is buried with the reason, its bytes kept', async () => {
    const name = uniqueQueue('mig');
    const c = client();
    const old = new Layout1Queue(c, name);
    await old.record();
    await old.add('bad', { n: 1 }, { delayMs: 60_000 });
    await c.hset(legacyKeys(name).jobs, 'bad', 'not an envelope');
    const report = await migrateQueue(c, name, options());
    expect(report.jobs).toMatchObject({ dead: 1, waiting: 0 });
    expect(report.problems.map((p) => p.id)).toEqual(['bad']);
    expect(report.problems[0]?.reason).toMatch(/could not be converted/);
    const info = await queue(name).get('bad');
    expect(info).toMatchObject({ state: 'dead', lastError: { name: 'MigrateError' } });
  });
});
