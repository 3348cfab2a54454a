/**
 * What `delayq migrate` writes, key by key: a queue written by delayq 0.1's own scripts
 * (test/fixtures/layout1) in every state, converted, then every layout-2 key read back and its
 * records decoded. (test/integration/migrate.test.ts checks the same through the public API.)
 */
import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import { UnknownQueueError } from '../../src/errors.js';
import { afterEach, describe, expect, it } from 'vitest';
import { jsonCodec } from '../../src/codec/json.js';
import { migrationCodec } from '../../src/migrate/codecs.js';
import { payloadConverter, templateConverter } from '../../src/migrate/payloads.js';
import { migrateQueue, type MigrateOptions } from '../../src/migrate/migrate.js';
import { decodeRecord, NEW_JOB_HEADER } from '../../src/record/index.js';
import { configKey, legacyKeys, legacyWheelBucketKey, partitionKeys } from '../../src/redis/keys.js';
import { Layout1Queue, seedEveryState } from '../fixtures/layout1/index.js';
import { inspector, uniqueQueue, useRedis } from '../support/fixtures.js';

const redis = useRedis();
const closers: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

function client(): Redis {
  const c = inspector(redis.url());
  closers.push(() => c.quit());
  return c;
}

/** The json codec's two halves: 0.1's envelopes in, layout-2 payloads out. */
const json = migrationCodec(jsonCodec);

function options(extra: Partial<MigrateOptions> = {}): MigrateOptions {
  return {
    who: 'migrate-state.test',
    resume: false,
    dryRun: false,
    yes: true,
    payloads: payloadConverter(json.envelopes, json.payloads),
    templates: templateConverter(json.envelopes, json.payloads),
    ...extra,
  };
}

/** A ZSET as member -> score. */
async function zset(c: Redis, key: string): Promise<Record<string, number>> {
  const flat = await c.zrange(key, 0, -1, 'WITHSCORES');
  const out: Record<string, number> = {};
  for (let i = 0; i < flat.length; i += 2) out[flat[i]!] = Number(flat[i + 1]);
  return out;
}

describe('delayq migrate, key by key', () => {
  it('every state of a 0.1 queue lands in its layout-2 keys with its scores, attempts and errors', async () => {
    const name = uniqueQueue('mig');
    const c = client();
    const old = new Layout1Queue(c, name);
    const seeded = await seedEveryState(old);
    const k = legacyKeys(name);
    const before = {
      active: await zset(c, k.active),
      leases: await c.hgetall(k.leases),
      dead: await zset(c, k.dead),
      completed: await zset(c, k.completed),
      done: await zset(c, k.done),
      cancelled: await zset(c, partitionKeys(name, 1)[0]!.cancelled),
      events: await c.xlen(k.events),
      last: await c.zscore(k.schedule, seeded.occurrence),
    };
    expect(before.events).toBeGreaterThan(0);

    const report = await migrateQueue(c, name, options());
    expect(report).toMatchObject({
      status: 'migrated',
      jobs: { waiting: 4, active: 2, dead: 1, completed: 2, cancelled: 1 },
      problems: [],
      schedules: { converted: 1, problems: [] },
    });

    const q = partitionKeys(name, 1)[0]!;
    // Waiting jobs: the same due times.
    expect(await zset(c, q.waiting)).toEqual(seeded.dues);
    // Running jobs: one member each, "<attempts>.<lease start>|<id>", with the old deadline.
    const start = (id: string): string => before.leases[id]!.split('|')[1]!;
    expect(await zset(c, q.leases)).toEqual({
      [`1.${start('valid')}|valid`]: before.active['valid'],
      [`1.${start('expired')}|expired`]: before.active['expired'],
    });
    expect(await zset(c, q.dead)).toEqual(before.dead);
    expect(await zset(c, q.completed)).toEqual({
      completed: before.completed['completed'],
      gone: before.done['gone'],
    });
    expect(await zset(c, q.cancelled)).toEqual(before.cancelled);

    const records = await c.hgetallBuffer(q.records);
    expect(Object.keys(records).sort()).toEqual(
      [
        'cancelled',
        'completed',
        'dead',
        'expired',
        'gone',
        'immediate',
        'retrying',
        'scheduled',
        seeded.occurrence,
        'valid',
      ].sort(),
    );
    const decoded = (id: string) => {
      const { header, payload } = decodeRecord(records[id]!);
      return { header, payload: payload.length === 0 ? null : (JSON.parse(payload.toString()) as unknown) };
    };
    expect(decoded('scheduled').payload).toEqual({ n: 'scheduled' });
    expect(decoded('scheduled').header).toMatchObject({ attempts: 0, maxAttempts: 5, hasError: false });
    expect(decoded('scheduled').header.createdAt).toBeGreaterThanOrEqual(seeded.now);
    expect(decoded('immediate').payload).toEqual({ n: 'immediate' });
    expect(decoded('valid').header).toMatchObject({
      attempts: 1,
      claims: 1,
      claimedAt: Number(start('valid')),
      maxAttempts: 3,
    });
    expect(decoded('dead').payload).toEqual({ n: 'dead' });
    expect(decoded('dead').header).toMatchObject({ attempts: 1, maxAttempts: 1, hasError: true });
    expect(decoded('retrying').header).toMatchObject({ attempts: 1, hasError: true });
    expect(decoded('completed')).toEqual({ header: { ...NEW_JOB_HEADER, completed: true }, payload: null });
    expect(decoded('gone')).toEqual({ header: { ...NEW_JOB_HEADER, completed: true }, payload: null });
    expect(decoded('cancelled')).toEqual({ header: { ...NEW_JOB_HEADER, cancelled: true }, payload: null });

    const errors = await c.hgetall(q.errors);
    expect(Object.keys(errors).sort()).toEqual(['dead', 'retrying']);
    expect(JSON.parse(errors['dead']!)).toMatchObject({ message: 'boom' });
    expect(JSON.parse(errors['retrying']!)).toMatchObject({ message: 'try later' });

    // The events keep their history under the new name.
    expect(await c.xlen(q.events)).toBe(before.events);

    // The schedule: same name and mark, the template is now the payload alone, and its rev is
    // computed over it as queue.schedule() computes it.
    expect(await c.zscore(q.scheduleLast, 'tick')).toBe(String(Number(seeded.occurrence.split('@')[1])));
    const template = await c.hgetBuffer(q.schedulePayloads, 'tick');
    expect(template?.toString()).toBe('{"n":"tick"}');
    const definition = JSON.parse((await c.hget(q.schedules, 'tick'))!) as Record<string, unknown>;
    const { rev, ...rest } = definition;
    // Layout 2's definition format: the template's payload version moves in from the envelope.
    expect(rest).toEqual({ v: 2, spec: { every: 1_000 }, missed: 'skip', grace: 1_000, m: 3, version: 1 });
    expect(rev).toBe(
      createHash('sha1').update(JSON.stringify(rest)).update(template!).digest('hex').slice(0, 20),
    );

    // Nothing of layout 1 is left, and the record says format 2.
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
    expect(await c.hgetall(configKey(name))).toEqual({
      format: '2',
      layout: 'zset',
      partitions: '1',
      codec: 'json',
      events: '10000',
    });
  });

  it('a dry run converts everything and writes nothing', async () => {
    const name = uniqueQueue('mig');
    const c = client();
    await seedEveryState(new Layout1Queue(c, name));
    const keys = (await c.keys(`dq:{${name}}*`)).sort();
    const snapshot = await Promise.all(keys.map((key) => c.dump(key)));
    const report = await migrateQueue(c, name, options({ dryRun: true }));
    expect(report).toMatchObject({
      status: 'dry-run',
      jobs: { waiting: 4, active: 2, dead: 1, completed: 2, cancelled: 1 },
      schedules: { converted: 1 },
    });
    expect((await c.keys(`dq:{${name}}*`)).sort()).toEqual(keys);
    expect(await Promise.all(keys.map((key) => c.dump(key)))).toEqual(snapshot);
  });

  it('a stopped migration resumes where it was; each job is converted once', async () => {
    const name = uniqueQueue('mig');
    const c = client();
    const old = new Layout1Queue(c, name);
    await old.record();
    const ids = Array.from({ length: 30 }, (_, i) => `j${i}`);
    for (const id of ids) await old.add(id, { id }, { delayMs: 3_600_000 });
    const stopped = await migrateQueue(
      c,
      name,
      options({
        chunk: 4,
        onProgress: (p) => {
          if (p.done >= 12) throw new Error('stopped');
        },
      }),
    ).catch((e: Error) => e);
    expect(stopped).toMatchObject({ message: 'stopped' });
    const k = legacyKeys(name);
    const q = partitionKeys(name, 1)[0]!;
    expect(await c.zcard(q.waiting)).toBe(12);
    expect(await c.zcard(k.schedule)).toBe(18);
    expect(await c.hget(configKey(name), 'migrating')).toMatch(/^\d+\|migrate-state\.test$/);

    const resumed = await migrateQueue(c, name, options({ resume: true, who: 'second run' }));
    expect(resumed).toMatchObject({ status: 'migrated', jobs: { waiting: 18 } });
    expect(Object.keys(await zset(c, q.waiting)).sort()).toEqual([...ids].sort());
    expect(await c.hlen(q.records)).toBe(ids.length);
    expect(await c.exists(k.schedule, k.jobs, k.meta)).toBe(0);
    expect(await c.hexists(configKey(name), 'migrating')).toBe(0);
  });

  it('a partitioned queue: each partition converted in its own tag', async () => {
    const name = uniqueQueue('mig');
    const c = client();
    const old = new Layout1Queue(c, name, 3);
    await old.record();
    const ids = Array.from({ length: 20 }, (_, i) => `p${i}`);
    for (const id of ids) await old.add(id, { id }, { delayMs: 60_000 });
    const olds = [0, 1, 2].map((i) => legacyKeys(name, i));
    const sizes = await Promise.all(olds.map((keys) => c.zcard(keys.schedule)));
    expect(sizes.filter((n) => n > 0).length).toBeGreaterThan(1);

    const report = await migrateQueue(c, name, options());
    expect(report).toMatchObject({ status: 'migrated', partitions: 3, jobs: { waiting: 20 } });
    const current = partitionKeys(name, 3);
    for (const [i, keys] of current.entries()) {
      expect(await c.zcard(keys.waiting)).toBe(sizes[i]);
      expect(await c.hlen(keys.records)).toBe(sizes[i]);
      expect(await c.exists(olds[i]!.schedule, olds[i]!.jobs, olds[i]!.meta)).toBe(0);
    }
    expect(await c.hget(configKey(name), 'format')).toBe('2');
  });

  it('a job that changed since its chunk was read is read again, never overwritten from stale data', async () => {
    const name = uniqueQueue('mig');
    const c = client();
    const old = new Layout1Queue(c, name);
    await old.record();
    await old.add('a', { v: 1 }, { delayMs: 60_000 });
    const k = legacyKeys(name);
    let touched = false;
    const report = await migrateQueue(
      c,
      name,
      options({
        // A 0.1 client rewrites the job's meta between the read and the write of its chunk.
        payloads: (bytes, id) => {
          if (!touched) {
            touched = true;
            void c.hset(k.meta, 'a', JSON.stringify({ a: 0, m: 7, r: Date.now() + 60_000 }));
          }
          return payloadConverter(json.envelopes, json.payloads)(bytes, id);
        },
      }),
    );
    expect(report.jobs.waiting).toBe(1);
    const record = await c.hgetBuffer(partitionKeys(name, 1)[0]!.records, 'a');
    expect(decodeRecord(record!).header.maxAttempts).toBe(7);
  });
});

describe('delayq migrate, nothing to convert', () => {
  it('a queue no client ever used is unknown, and nothing is recorded for it', async () => {
    const c = client();
    const name = uniqueQueue('mig');
    await expect(migrateQueue(c, name, options())).rejects.toBeInstanceOf(UnknownQueueError);
    expect(await c.keys(`dq:{${name}}*`)).toEqual([]);
  });
});

describe('delayq migrate, a wheel queue', () => {
  it('its waiting jobs (in ready and in buckets) go to s at their due times; the wheel lists go', async () => {
    const name = uniqueQueue('mig');
    const c = client();
    const old = new Layout1Queue(c, name, 1, 1_000);
    await old.record();
    await old.add('now', { n: 1 });
    await old.add('soon', { n: 2 }, { delayMs: 5_000 });
    await old.add('later', { n: 3 }, { delayMs: 3_600_000 });
    const k = legacyKeys(name);
    expect(await c.lrange(k.ready, 0, -1)).toEqual(['now']);
    const starts = await c.zrange(k.wheel, 0, -1);
    expect(starts).toHaveLength(2);
    const dues = Object.fromEntries(
      await Promise.all(
        ['now', 'soon', 'later'].map(async (id) => [
          id,
          (JSON.parse((await c.hget(k.meta, id))!) as { r: number }).r,
        ]),
      ),
    ) as Record<string, number>;

    const report = await migrateQueue(c, name, options());
    expect(report).toMatchObject({ status: 'migrated', jobs: { waiting: 3 } });
    const q = partitionKeys(name, 1)[0]!;
    expect(await zset(c, q.waiting)).toEqual(dues);
    const buckets = starts.map((start) => legacyWheelBucketKey(k, Number(start)));
    expect(await c.exists(k.ready, k.wheel, k.wheelCount, k.jobs, k.meta, ...buckets)).toBe(0);
    expect(await c.hgetall(configKey(name))).toMatchObject({ format: '2', layout: 'wheel:1000' });
  });
});
