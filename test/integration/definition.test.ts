/**
 * One queue definition (issue 12): the first client records what every client must agree on in
 * `dq:{q}:config`; a later client that disagrees gets ConfigMismatchError naming the field and
 * both values, and writes nothing; a client that leaves a setting out adopts the recorded one; a
 * queue from before the record (only the old layout/partitions keys) is read as it is.
 */
import { createServer } from 'node:net';
import type { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import {
  ConfigMismatchError,
  ConnectionError,
  LayoutMismatchError,
  PartitionMismatchError,
  Queue,
  UnknownQueueError,
  UnsupportedLayoutError,
  Worker,
  type QueueOptions,
  type WorkerOptions,
} from '../../src/index.js';
import { Inspector } from '../../src/inspect/inspector.js';
import { configKey, legacyKeys, partitionKeys, queueKeys } from '../../src/redis/keys.js';
import { inspector, uniqueQueue, useRedis, waitFor } from '../support/fixtures.js';

const redis = useRedis();
const closers: Array<() => Promise<unknown>> = [];

afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

function queue<T>(name: string, options: QueueOptions<T> = {}): Queue<T> {
  const q = new Queue<T>(name, { connection: redis.url(), ...options });
  closers.push(() => q.close());
  return q;
}

function worker<T>(name: string, handler: (payload: T) => void, options: WorkerOptions<T> = {}): Worker<T> {
  const w = new Worker<T>(name, async (job) => handler(job.payload), {
    connection: redis.url(),
    ...options,
  });
  w.on('error', () => {});
  closers.push(() => w.close());
  return w;
}

function client(): Redis {
  const c = inspector(redis.url());
  closers.push(() => c.quit());
  return c;
}

/** Every key of queue `name` (all partitions' tags too) with its whole content. */
async function dump(name: string): Promise<Record<string, unknown>> {
  const r = client();
  const out: Record<string, unknown> = {};
  for (const key of (await r.keys(`dq:{${name}*`)).sort()) {
    const type = await r.type(key);
    if (type === 'string') out[key] = await r.get(key);
    else if (type === 'hash') out[key] = await r.hgetall(key);
    else if (type === 'zset') out[key] = await r.zrange(key, 0, -1, 'WITHSCORES');
    else if (type === 'list') out[key] = await r.lrange(key, 0, -1);
    else if (type === 'stream') out[key] = await r.xrange(key, '-', '+');
    else out[key] = type;
  }
  return out;
}

/** `call`'s rejection, which must be a ConfigMismatchError. */
async function mismatch(call: Promise<unknown>): Promise<ConfigMismatchError> {
  const err = await call.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ConfigMismatchError);
  return err as ConfigMismatchError;
}

describe('the config record', () => {
  it('is written by the first client, whole, and read back by the next', async () => {
    const name = uniqueQueue('def');
    await queue(name, { codec: 'msgpack', version: 2 }).add({ a: 1 }, { delay: '1h' });
    expect(await client().hgetall(configKey(name))).toEqual({
      format: '2',
      layout: 'zset',
      partitions: '1',
      codec: 'msgpack',
      events: '-10000',
      version: '2',
    });
    // No layout-1 keys: the record holds the layout and the partition count.
    expect(await client().exists(legacyKeys(name).layout, legacyKeys(name).partitions)).toBe(0);
  });

  it('a client that leaves settings out adopts the recorded ones: a msgpack, wheel queue', async () => {
    const name = uniqueQueue('def');
    const producer = queue<{ n: number }>(name, {
      codec: 'msgpack',
      strategy: 'wheel',
      wheel: { granularityMs: 100 },
      events: false,
    });
    await producer.add({ n: 7 }, { id: 'j' });
    const seen: number[] = [];
    const w = worker<{ n: number }>(name, (p) => void seen.push(p.n));
    await w.waitUntilReady();
    expect(w.strategy).toBe('wheel');
    await waitFor(() => seen.length === 1, { timeoutMs: 5_000 });
    expect(seen).toEqual([7]);
    // The plain Queue decodes with the recorded codec too.
    const plain = queue<{ n: number }>(name);
    await plain.add({ n: 8 }, { id: 'k', delay: '1h' });
    expect((await plain.get('k'))?.payload).toEqual({ n: 8 });
    expect(await client().exists(queueKeys(name).events)).toBe(0);
  });
});

describe('ConfigMismatchError: a client that disagrees names both values and writes nothing', () => {
  it('codec', async () => {
    const name = uniqueQueue('def');
    await queue(name, { codec: 'msgpack' }).add(1, { id: 'a', delay: '1h' });
    const before = await dump(name);
    const json = queue(name, { codec: 'json' });
    const err = await mismatch(json.add(2, { id: 'b' }));
    expect(err).toMatchObject({ field: 'codec', stored: 'msgpack', wanted: 'json', queue: name });
    expect(err.message).toMatch(/codec: msgpack recorded but this client uses codec: json/);
    const w = worker(name, () => {}, { codec: 'json' });
    expect((await mismatch(w.waitUntilReady())).field).toBe('codec');
    expect(await dump(name)).toEqual(before);
  });

  it('partitions', async () => {
    const name = uniqueQueue('def');
    await queue(name, { partitions: 2 }).add(1, { delay: '1h' });
    const before = await dump(name);
    const err = await mismatch(queue(name, { partitions: 3 }).add(2));
    expect(err).toBeInstanceOf(PartitionMismatchError);
    expect(err).toMatchObject({ field: 'partitions', stored: 2, wanted: 3 });
    expect(err.message).toMatch(/partitions: 2 but this client uses partitions: 3/);
    expect(await dump(name)).toEqual(before);
    // Nothing in the keys of a third partition.
    expect(await client().exists(partitionKeys(name, 3)[2]!.waiting)).toBe(0);
  });

  it('strategy (the layout it writes)', async () => {
    const name = uniqueQueue('def');
    await queue(name, { strategy: 'wheel' }).add(1, { delay: '1h' });
    const before = await dump(name);
    const w = worker(name, () => {}, { strategy: 'zpopmin' });
    const err = await mismatch(w.waitUntilReady());
    expect(err).toBeInstanceOf(LayoutMismatchError);
    expect(err).toMatchObject({ field: 'layout', stored: 'wheel:1000', wanted: 'zset' });
    const other = await mismatch(queue(name, { strategy: 'wheel', wheel: { granularityMs: 500 } }).add(2));
    expect(other).toMatchObject({ stored: 'wheel:1000', wanted: 'wheel:500' });
    expect(await dump(name)).toEqual(before);
  });

  it('events', async () => {
    const name = uniqueQueue('def');
    await queue(name, { events: false }).add(1, { delay: '1h' });
    const before = await dump(name);
    const err = await mismatch(queue(name, { events: { maxLen: 100 } }).add(2));
    expect(err).toMatchObject({ field: 'events', stored: 'false', wanted: '{ maxLen: 100 }' });
    const w = worker(name, () => {}, { events: { maxLen: 100, only: 'all' } });
    const werr = await mismatch(w.waitUntilReady());
    expect(werr.message).toMatch(
      /events: false recorded but this client uses events: \{ maxLen: 100, only: 'all' \}/,
    );
    expect(await dump(name)).toEqual(before);
  });

  it('a data layout format this version cannot read', async () => {
    const name = uniqueQueue('def');
    await client().hset(configKey(name), {
      format: '3',
      layout: 'zset',
      partitions: '1',
      codec: 'json',
      events: '0',
    });
    const err = await mismatch(queue(name).add(1));
    expect(err).toMatchObject({ field: 'format', stored: '3', wanted: 2 });
    expect(await client().exists(queueKeys(name).records)).toBe(0);
  });
});

describe('layout-1 queues (delayq 0.1) are refused until `delayq migrate` converts them', () => {
  /** `call`'s rejection, which must be an UnsupportedLayoutError naming the queue and the command. */
  async function unsupported(call: Promise<unknown>, name: string): Promise<void> {
    const err = await call.then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(UnsupportedLayoutError);
    expect((err as Error).message).toContain(`run \`delayq migrate ${name}\``);
  }

  it('a format-1 record: Queue, Worker and views alike, and nothing is written', async () => {
    const name = uniqueQueue('old');
    const c = client();
    await c.hset(configKey(name), {
      format: '1',
      layout: 'zset',
      partitions: '1',
      codec: 'json',
      events: '10000',
    });
    await c.zadd(legacyKeys(name).schedule, Date.now() + 60_000, 'a');
    const before = await dump(name);
    await unsupported(queue(name).add(1), name);
    await unsupported(worker(name, () => {}).waitUntilReady(), name);
    await unsupported(Inspector.open(c, name), name);
    expect(await dump(name)).toEqual(before);
  });

  it('no record but the keys 0.1 wrote before it had one: the layout or partitions key, or jobs', async () => {
    const c = client();
    const byLayout = uniqueQueue('old');
    await c.set(legacyKeys(byLayout).layout, 'zset');
    const byPartitions = uniqueQueue('old');
    await c.set(legacyKeys(byPartitions).partitions, '2');
    const byJobs = uniqueQueue('old');
    await c.zadd(legacyKeys(byJobs).dead, Date.now(), 'x');
    for (const name of [byLayout, byPartitions, byJobs]) {
      const before = await dump(name);
      await unsupported(queue(name).add(1), name);
      expect(await dump(name)).toEqual(before);
    }
  });

  it('while migrating: the refusal says since when and by whom', async () => {
    const name = uniqueQueue('old');
    const c = client();
    const since = Date.UTC(2026, 10, 30, 18, 0, 0);
    await c.hset(configKey(name), {
      format: '1',
      layout: 'zset',
      partitions: '1',
      migrating: `${since}|ops on host-1`,
    });
    const err = await queue(name)
      .add(1)
      .then(
        () => null,
        (e: unknown) => e,
      );
    expect(err).toBeInstanceOf(UnsupportedLayoutError);
    expect((err as Error).message).toBe(
      `queue '${name}' is in layout 1 (delayq 0.1) and being migrated since 2026-11-30T18:00:00.000Z by ops on host-1; wait for \`delayq migrate ${name}\` to finish, or if it stopped, run \`delayq migrate ${name} --resume\``,
    );
  });
});

describe('views (the Inspector of the CLI and dashboard) never write the record', () => {
  it('shows an unknown queue empty or refuses it, and records nothing', async () => {
    const c = client();
    const unknown = uniqueQueue('view');
    await expect(Inspector.open(c, unknown)).rejects.toBeInstanceOf(UnknownQueueError);
    const empty = await Inspector.open(c, unknown, { unknown: 'empty' });
    closers.push(() => empty.close());
    expect(await empty.counts()).toMatchObject({ scheduled: 0, nextDue: null });
    expect(await c.keys(`dq:{${unknown}}*`)).toEqual([]);
  });
});

describe('an unreachable Redis', () => {
  it('fails the first call fast with ConnectionError naming the URL and what was tried', async () => {
    // A port that was free a moment ago: nothing listens there.
    const port = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const { port: p } = probe.address() as { port: number };
        probe.close(() => resolve(p));
      });
    });
    const q = new Queue(uniqueQueue('down'), { connection: `redis://127.0.0.1:${port}` });
    closers.push(() => q.close());
    const started = Date.now();
    const err = await q.counts().then(
      () => null,
      (e: unknown) => e,
    );
    const tookMs = Date.now() - started;
    expect(err).toBeInstanceOf(ConnectionError);
    expect((err as Error).message).toMatch(
      new RegExp(
        `cannot reach Redis at redis://127\\.0\\.0\\.1:${port}: .*ECONNREFUSED.*\\(3 connection attempts over \\d+ ms\\)`,
      ),
    );
    // ioredis alone took ~10.5 s to give up here.
    expect(tookMs).toBeLessThan(5_000);
  });
});
