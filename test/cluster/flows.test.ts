// Flows on a 3-master Redis Cluster (issue 33): a flow's jobs and its bookkeeping (f, fw) live in
// the queue's one hash slot, so a parent runs once after its children, a dead child fails it, a
// cancelled parent takes its waiting children with it, and a partitioned queue (several slots) is
// refused with the reason, writing nothing; so is a child in another queue (another hash tag, so
// another slot: no one script could count its end for its parent).
import { afterEach, describe, expect, it } from 'vitest';
import { FlowQueueError, Queue, UnrecoverableError, ValidationError, Worker } from '../../src/index.js';
import { queueKeys } from '../../src/redis/keys.js';
import { uniqueQueue, waitFor } from '../support/fixtures.js';
import { useRedisCluster } from './support.js';

const redis = useRedisCluster({ replicasPerMaster: 0 });
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

type Step = { step: string; fail?: boolean };

function open(name: string, partitions = 1): Queue<Step> {
  const queue = new Queue<Step>(name, { connection: redis.connection(), partitions });
  closers.push(() => queue.close());
  return queue;
}

describe('cluster: flows', () => {
  it("keep a flow's keys in the queue's slot, and run the parent once, after its children", async () => {
    const name = uniqueQueue('flow');
    const keys = queueKeys(name);
    const slot = await redis.cluster().shardOf(keys.waiting);
    expect((await redis.cluster().shardOf(keys.flows)).master.port).toBe(slot.master.port);
    expect((await redis.cluster().shardOf(keys.flowsWaiting)).master.port).toBe(slot.master.port);
    const queue = open(name);
    await queue.addFlow({
      payload: { step: 'p' },
      opts: { id: 'p' },
      children: [
        { payload: { step: 'a' }, opts: { id: 'a' } },
        {
          payload: { step: 'm' },
          opts: { id: 'm' },
          children: [{ payload: { step: 'g' }, opts: { id: 'g' } }],
        },
      ],
    });
    const runs: string[] = [];
    let seen: Record<string, unknown> | undefined;
    const worker = new Worker<Step>(
      name,
      async (job) => {
        runs.push(job.payload.step);
        if (job.payload.step === 'p') seen = await job.childResults();
        return job.payload.step;
      },
      { connection: redis.connection(), concurrency: 4 },
    );
    closers.push(() => worker.close({ timeoutMs: 2_000 }));
    await waitFor(async () => (await queue.get('p'))?.state === 'completed', {
      what: 'the parent to complete',
    });
    expect(runs.filter((step) => step === 'p')).toHaveLength(1);
    expect(runs.indexOf('g')).toBeLessThan(runs.indexOf('m'));
    expect(seen).toEqual({ a: 'a', m: 'm' });
  });

  it('a dead child fails its parent; cancelling a parent cancels its waiting children', async () => {
    const name = uniqueQueue('flow-end');
    const queue = open(name);
    await queue.addFlow({
      payload: { step: 'p' },
      opts: { id: 'p' },
      children: [{ payload: { step: 'bad', fail: true }, opts: { id: 'bad' } }],
    });
    await queue.addFlow({
      payload: { step: 'q' },
      opts: { id: 'q' },
      children: [{ payload: { step: 'later' }, opts: { id: 'later', delay: '1h' } }],
    });
    const worker = new Worker<Step>(
      name,
      async (job) => {
        if (job.payload.fail) throw new UnrecoverableError('no');
        return 1;
      },
      { connection: redis.connection() },
    );
    closers.push(() => worker.close({ timeoutMs: 2_000 }));
    await waitFor(async () => (await queue.get('p'))?.state === 'dead', { what: 'the parent to die' });
    expect((await queue.get('p'))?.lastError).toMatchObject({ name: 'ChildFailedError', child: 'bad' });
    expect(await queue.cancel('q')).toBe(true);
    expect((await queue.get('later'))?.state).toBe('cancelled');
  });

  it('a partitioned queue (its keys over several slots) refuses addFlow, writing nothing', async () => {
    const name = uniqueQueue('flow-part');
    const queue = open(name, 4);
    await expect(
      queue.addFlow({ payload: { step: 'p' }, children: [{ payload: { step: 'a' } }] }),
    ).rejects.toThrow(ValidationError);
    expect(await queue.counts()).toMatchObject({ scheduled: 0 });
  });

  it('a child in another queue is refused, saying why (two hash tags), writing nothing', async () => {
    const a = uniqueQueue('flow-xa');
    const b = uniqueQueue('flow-xb');
    const parent = open(a);
    const children = open(b);
    await children.counts();
    const err = await parent
      .addFlow({
        payload: { step: 'p' },
        opts: { id: 'p' },
        children: [{ payload: { step: 'c' }, queue: b }],
      })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FlowQueueError);
    expect((err as FlowQueueError).reason).toBe('cluster');
    expect((err as Error).message).toMatch(
      /two hash tags, in two slots that no one script can update together/,
    );
    expect(await parent.get('p')).toBeNull();
    expect(await parent.counts()).toMatchObject({ scheduled: 0 });
    expect(await children.counts()).toMatchObject({ scheduled: 0 });
  });
});
