/**
 * The CLI uses each queue's recorded definition (issue 12): it encodes and decodes with the
 * recorded codec (msgpack built in; custom codecs from --codec-module), refuses a codec it cannot
 * load before writing anything, and shows next due times and the due chart for wheel and
 * partitioned queues; a queue is known by its config record even when it is empty.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { Queue, Worker, type Codec, type QueueOptions } from '../../src/index.js';
import { queueKeys } from '../../src/redis/keys.js';
import { inspector, uniqueQueue, useRedis, waitFor } from '../support/fixtures.js';
import { buildOnce, runCli } from './run-cli.js';

const redis = useRedis();
let dir: string;
let codecModule: string;
const open: Array<{ close(): Promise<void> }> = [];

// A custom codec as a user would write one: JSON, base64-encoded, named 'b64json'.
const CODEC_SOURCE = `
export default {
  name: 'b64json',
  encodePayload: (payload) => Buffer.from(Buffer.from(JSON.stringify(payload)).toString('base64')),
  decodePayload: (bytes) => JSON.parse(Buffer.from(bytes.toString(), 'base64').toString()),
};
`;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'delayq-cli-codecs-'));
  codecModule = join(dir, 'codec.mjs');
  await writeFile(codecModule, CODEC_SOURCE);
  await buildOnce();
}, 120_000);
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});
afterEach(async () => {
  await Promise.all(open.splice(0).map((o) => o.close()));
});

function newQueue<T>(name: string, options: QueueOptions<T> = {}): Queue<T> {
  const queue = new Queue<T>(name, { connection: redis.url(), ...options });
  open.push(queue);
  return queue;
}

const cli = (args: string[]) => runCli(args, { redisUrl: redis.url() });
const json = (text: string): unknown => JSON.parse(text.trim().split('\n').at(-1)!);

vi.setConfig({ testTimeout: 60_000 });

describe('the recorded codec', () => {
  it('delayq add to a msgpack queue: a msgpack worker completes it; delayq show prints its payload', async () => {
    const q = uniqueQueue('mp');
    await newQueue(q, { codec: 'msgpack' }).counts();
    const added = await cli(['--json', 'add', q, '{"to":"a@b.c","n":[1,2]}', '--id', 'm1', '--delay', '1h']);
    expect(added.code).toBe(0);

    const shown = await cli(['--json', 'show', q, 'm1']);
    expect(shown.code).toBe(0);
    expect(json(shown.stdout)).toMatchObject({ id: 'm1', payload: { to: 'a@b.c', n: [1, 2] } });
    const text = await cli(['show', q, 'm1']);
    expect(text.stdout).toContain('a@b.c');
    expect(text.stdout).not.toMatch(/could not be decoded/);
    // The bytes stored are msgpack, not JSON.
    const r = inspector(redis.url());
    open.push({ close: async () => void (await r.quit()) });
    const stored = (await r.hgetBuffer(queueKeys(q).records, 'm1'))!;
    // After the record's header (2 bytes for a job with default options), msgpack, not JSON.
    expect(stored.subarray(0, 2)).toEqual(Buffer.from([0x01, 0x00]));
    expect(() => JSON.parse(stored.subarray(2).toString()) as unknown).toThrow();

    expect((await cli(['reschedule', q, 'm1', '--delay', '0'])).code).toBe(0);
    const payloads: unknown[] = [];
    const worker = new Worker(q, async (job) => void payloads.push(job.payload), {
      connection: redis.url(),
      codec: 'msgpack',
    });
    open.push(worker);
    const dead: string[] = [];
    worker.on('dead', (_job, err) => dead.push(err.message));
    await waitFor(() => payloads.length === 1, { what: 'the msgpack worker completes the job' });
    expect(payloads).toEqual([{ to: 'a@b.c', n: [1, 2] }]);
    expect(dead).toEqual([]);
  });

  it('a codec the CLI cannot load: exit 1 naming the codec and --codec-module, and nothing written', async () => {
    const q = uniqueQueue('custom');
    const codec = ((await import(pathToFileURL(codecModule).href)) as { default: Codec }).default;
    const queue = newQueue<{ n: number }>(q, { codec });
    await queue.add({ n: 1 }, { id: 'c1', delay: '1h' });

    const refused = await cli(['add', q, '{"n":2}', '--id', 'c2']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/codec 'b64json'.*--codec-module/);
    expect(refused.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(await queue.get('c2')).toBeNull();
    expect(await queue.counts()).toMatchObject({ scheduled: 1 });
    const file = join(dir, 'jobs.ndjson');
    await writeFile(file, '{"payload":{"n":3},"id":"c3"}\n');
    const refusedFile = await cli(['add', q, '--file', file]);
    expect(refusedFile.code).toBe(1);
    expect(refusedFile.stderr).toMatch(/codec 'b64json'.*--codec-module/);
    expect(await queue.get('c3')).toBeNull();

    // With the module, the CLI writes and reads the queue's own codec.
    const added = await cli([
      '--codec-module',
      codecModule,
      'add',
      q,
      '{"n":2}',
      '--id',
      'c2',
      '--delay',
      '1h',
    ]);
    expect(added.code).toBe(0);
    expect((await queue.get('c2'))?.payload).toEqual({ n: 2 });
    const shown = await cli(['--json', '--codec-module', codecModule, 'show', q, 'c1']);
    expect(json(shown.stdout)).toMatchObject({ payload: { n: 1 } });
    // A module that is not there: exit 1 naming it.
    const missing = await cli(['--codec-module', join(dir, 'nope.mjs'), 'show', q, 'c1']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/--codec-module .*nope\.mjs could not be loaded/);
  });
});

describe('stats for every strategy and partitions', () => {
  /** Add jobs due in 2 and 12 minutes, and return their due times. */
  async function seed(queue: Queue<number>): Promise<number[]> {
    const results = await queue.addBulk([
      { payload: 1, opts: { id: 'soon', delay: 2 * 60_000 } },
      { payload: 2, opts: { id: 'later', delay: 12 * 60_000 } },
    ]);
    return results.map((r) => r.runAt.getTime());
  }

  for (const [label, options] of [
    ['a wheel queue', { strategy: 'wheel', wheel: { granularityMs: 1_000 } }],
    ['a partitioned queue', { partitions: 4 }],
  ] as const) {
    it(`delayq stats shows next due and the due chart for ${label}`, async () => {
      const q = uniqueQueue('stats');
      const [soon] = await seed(newQueue<number>(q, options));
      const one = await cli(['--json', 'stats', q]);
      expect(one.code).toBe(0);
      const stats = json(one.stdout) as {
        nextDue: number;
        strategy: string;
        due: { bucketMs: number; overdue: number; counts: number[] };
      };
      // The wheel's next due is the end of the bucket holding the job (its promotion), within a bucket.
      expect(stats.nextDue).toBeGreaterThanOrEqual(soon!);
      expect(stats.nextDue).toBeLessThanOrEqual(soon! + 1_000);
      expect(stats.strategy).toMatch(
        'wheel' in options ? /^wheel \(1000 ms buckets\)$/ : /^(zpopmin|range)$/,
      );
      // Slices of 5 minutes: one job in the first, one in the third.
      expect(stats.due.bucketMs).toBe(5 * 60_000);
      expect(stats.due.overdue).toBe(0);
      expect(stats.due.counts.slice(0, 4)).toEqual([1, 0, 1, 0]);
      const text = await cli(['stats', q]);
      expect(text.stdout).toMatch(/next due +\S+ \(in 1 min|next due +\S+ \(in 2 min/);
      expect(text.stdout).toMatch(/due +now:0 5m:1 10m:0 15m:1 /);

      const all = await cli(['--json', 'stats']);
      const row = (
        json(all.stdout) as { queues: Array<{ name: string; nextDue: number; strategy: string }> }
      ).queues.find((x) => x.name === q);
      expect(row?.nextDue).toBe(stats.nextDue);
      expect(row?.strategy).toBe(stats.strategy);
    });
  }

  it('a queue is known by its config record even when empty; an unknown one exits 1 naming it', async () => {
    const q = uniqueQueue('empty');
    await newQueue(q, { strategy: 'wheel' }).counts();
    const all = await cli(['--json', 'stats']);
    const row = (json(all.stdout) as { queues: Array<Record<string, unknown>> }).queues.find(
      (x) => x.name === q,
    );
    expect(row).toMatchObject({ name: q, scheduled: 0, nextDue: null, strategy: 'wheel (1000 ms buckets)' });
    const text = await cli(['stats']);
    expect(text.stdout).toMatch(
      new RegExp(`^${q} +0 +0 +0 +0 +0 +0 +0 +0 +- +wheel \\(1000 ms buckets\\) +-$`, 'm'),
    );
    const unknown = uniqueQueue('typo');
    const ls = await cli(['ls', unknown]);
    expect(ls.code).toBe(1);
    expect(ls.stderr).toMatch(new RegExp(`no queue '${unknown}'`));
    const listed = await cli(['ls', q]);
    expect(listed.code).toBe(0);
  });
});
