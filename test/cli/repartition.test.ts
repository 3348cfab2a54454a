// `delayq repartition <queue> --to P`: grows a running queue, shows the workers following and the
// partitions' jobs; refuses shrinking (exit 1) and a missing --to (exit 2).
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Queue, Worker } from '../../src/index.js';
import { uniqueQueue, useRedis } from '../support/fixtures.js';
import { buildOnce, runCli } from './run-cli.js';

const redis = useRedis();
const cli = (args: string[]) => runCli(args, { redisUrl: redis.url() });
const json = (text: string): unknown => JSON.parse(text.trim().split('\n').at(-1)!);

vi.setConfig({ testTimeout: 60_000 });
beforeAll(async () => {
  await buildOnce();
}, 120_000);

describe('delayq repartition', () => {
  const open: Array<() => Promise<unknown>> = [];
  afterAll(async () => {
    for (const close of open.reverse()) await close();
  });

  it('grows 1 -> 3 while a worker runs, which follows; shrinking is refused', async () => {
    const q = uniqueQueue('cli-rp');
    const queue = new Queue<number>(q, { connection: redis.url() });
    open.push(() => queue.close());
    const worker = new Worker<number>(q, async () => {}, { connection: redis.url() });
    open.push(() => worker.close());
    await worker.waitUntilReady();
    await queue.addBulk(Array.from({ length: 5 }, (_, i) => ({ payload: i, opts: { delay: '1h' } })));

    const grown = await cli(['repartition', q, '--to', '3']);
    expect(grown.code).toBe(0);
    expect(grown.stdout).toContain(`re-partitioned ${q}: partitions 1 -> 3`);
    expect(grown.stdout).toMatch(/^workers: 1\/1 follow partitions 3$/m);
    expect(grown.stdout).toMatch(/^ +0 +5 +0 +1$/m);

    // The views open it with the recorded count: partition 0 is still the queue's own keys.
    const stats = await cli(['--json', 'stats', q]);
    expect(json(stats.stdout)).toMatchObject({ queue: q, counts: { scheduled: 5, active: 0 } });

    const again = await cli(['--json', 'repartition', q, '--to', '3', '--wait', '0']);
    expect(again.code).toBe(0);
    expect(json(again.stdout)).toMatchObject({ partitions: 3, base: 1, previous: 3, following: true });

    const shrink = await cli(['repartition', q, '--to', '2']);
    expect(shrink.code).toBe(1);
    expect(shrink.stderr).toMatch(
      /cannot be re-partitioned: partitions 2 is below the recorded 3: shrinking is not supported/,
    );

    const missing = await cli(['repartition', q]);
    expect(missing.code).toBe(2);
  });
});
