/**
 * Flows (queue.addFlow, issue 33): a parent runs once, after every child completed, and reads
 * their results; a dead child fails its parent (or is ignored); cancelling a parent cancels its
 * waiting children; a flow is added whole or not at all; get() shows the links. Against a real
 * redis-server, with the whole of the flow keys asserted where a test ends a flow.
 */
import { afterEach, describe, expect, it } from 'vitest';
import {
  FlowExistsError,
  MAX_FLOW_CHILDREN,
  MAX_FLOW_LEVELS,
  Queue,
  UnrecoverableError,
  ValidationError,
  Worker,
  type FlowJob,
} from '../../src/index.js';
import { queueKeys } from '../../src/redis/keys.js';
import { inspector, uniqueQueue, useRedis, waitFor } from '../support/fixtures.js';

const redis = useRedis();
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

type Step = { step: string; fail?: boolean };

function queueOf(name: string): Queue<Step> {
  const queue = new Queue<Step>(name, { connection: redis.url() });
  closers.push(() => queue.close());
  return queue;
}

function workerOf(name: string, handler: ConstructorParameters<typeof Worker<Step>>[1]): Worker<Step> {
  const worker = new Worker<Step>(name, handler, { connection: redis.url(), concurrency: 4 });
  closers.push(() => worker.close({ timeoutMs: 2_000 }));
  return worker;
}

function client() {
  const c = inspector(redis.url());
  closers.push(async () => void (await c.quit()));
  return c;
}

describe('a parent and its children', () => {
  it('runs the parent once, after every child completed, with their results', async () => {
    const name = uniqueQueue('flow');
    const queue = queueOf(name);
    const flow = await queue.addFlow({
      payload: { step: 'parent' },
      opts: { id: 'p' },
      children: [
        { payload: { step: 'a' }, opts: { id: 'a' } },
        { payload: { step: 'b' }, opts: { id: 'b', delay: 50 } },
        { payload: { step: 'c' }, opts: { id: 'c' } },
      ],
    });
    expect(flow.id).toBe('p');
    expect(flow.children.map((child) => child.id)).toEqual(['a', 'b', 'c']);
    const held = await queue.get('p');
    expect(held?.state).toBe('waiting-children');
    expect(held?.children).toEqual([
      { id: 'a', state: 'scheduled' },
      { id: 'b', state: 'scheduled' },
      { id: 'c', state: 'scheduled' },
    ]);
    expect((await queue.get('b'))?.parent).toBe('p');

    const order: string[] = [];
    let seen: Record<string, unknown> | undefined;
    workerOf(name, async (job) => {
      order.push(job.payload.step);
      if (job.payload.step === 'parent') {
        seen = await job.childResults();
        return 'done';
      }
      return { from: job.payload.step };
    });
    await waitFor(async () => (await queue.get('p'))?.state === 'completed', {
      what: 'the parent to complete',
    });
    expect(order.filter((step) => step === 'parent')).toHaveLength(1);
    expect(order[order.length - 1]).toBe('parent');
    expect(seen).toEqual({ a: { from: 'a' }, b: { from: 'b' }, c: { from: 'c' } });
    // The flow is over: its bookkeeping is gone.
    const c = client();
    const keys = queueKeys(name);
    expect(await c.hgetall(keys.flows)).toEqual({});
    expect(await c.zcard(keys.flowsWaiting)).toBe(0);
  });

  it('waits for its own delay too, when its children complete first', async () => {
    const name = uniqueQueue('flow-delay');
    const queue = queueOf(name);
    await queue.addFlow({
      payload: { step: 'parent' },
      opts: { id: 'p', delay: 1_500 },
      children: [{ payload: { step: 'a' } }],
    });
    const started: Record<string, number> = {};
    workerOf(name, async (job) => {
      started[job.payload.step] = job.claimedAt.getTime();
      return job.payload.step;
    });
    await waitFor(() => started.parent, { what: 'the parent to start' });
    const due = (await queue.get('p'))?.runAt.getTime() ?? 0;
    expect(started.parent).toBeGreaterThanOrEqual(due);
    // The child had completed well before: the parent waited for its own due time.
    expect(started.a).toBeLessThan(due);
  });

  it('a flow three levels deep runs bottom up', async () => {
    const name = uniqueQueue('flow-deep');
    const queue = queueOf(name);
    await queue.addFlow({
      payload: { step: 'root' },
      opts: { id: 'root' },
      children: [
        {
          payload: { step: 'mid' },
          opts: { id: 'mid' },
          children: [{ payload: { step: 'leaf' }, opts: { id: 'leaf' } }],
        },
      ],
    });
    expect((await queue.get('mid'))?.state).toBe('waiting-children');
    const order: string[] = [];
    const results: Record<string, unknown> = {};
    workerOf(name, async (job) => {
      // The results first: the wait below counts runs, and must not outrun the last one's read.
      results[job.payload.step] = await job.childResults();
      order.push(job.payload.step);
      return job.payload.step.toUpperCase();
    });
    await waitFor(() => order.length === 3, { what: 'three runs' });
    expect(order).toEqual(['leaf', 'mid', 'root']);
    expect(results).toEqual({ leaf: {}, mid: { leaf: 'LEAF' }, root: { mid: 'MID' } });
  });
});

describe('a child that does not complete', () => {
  it("makes the parent dead, naming it (onChildFailure 'fail', the default)", async () => {
    const name = uniqueQueue('flow-fail');
    const queue = queueOf(name);
    await queue.addFlow({
      payload: { step: 'parent' },
      opts: { id: 'p' },
      children: [
        { payload: { step: 'ok' }, opts: { id: 'ok' } },
        { payload: { step: 'bad', fail: true }, opts: { id: 'bad' } },
      ],
    });
    const ran: string[] = [];
    workerOf(name, async (job) => {
      ran.push(job.payload.step);
      if (job.payload.fail) throw new UnrecoverableError('no');
      return 1;
    });
    await waitFor(async () => (await queue.get('p'))?.state === 'dead', { what: 'the parent to die' });
    const parent = await queue.get('p');
    expect(parent?.lastError).toMatchObject({ name: 'ChildFailedError', child: 'bad' });
    expect(parent?.lastError?.message).toContain('child bad is dead');
    expect(ran).not.toContain('parent');
    const c = client();
    expect(await c.hgetall(queueKeys(name).flows)).toEqual({});
  });

  it("is left out with onChildFailure 'ignore'", async () => {
    const name = uniqueQueue('flow-ignore');
    const queue = queueOf(name);
    await queue.addFlow({
      payload: { step: 'parent' },
      opts: { id: 'p', onChildFailure: 'ignore' },
      children: [
        { payload: { step: 'ok' }, opts: { id: 'ok' } },
        { payload: { step: 'bad', fail: true }, opts: { id: 'bad' } },
      ],
    });
    let seen: Record<string, unknown> | undefined;
    workerOf(name, async (job) => {
      if (job.payload.fail) throw new UnrecoverableError('no');
      if (job.payload.step === 'parent') seen = await job.childResults();
      return job.payload.step;
    });
    await waitFor(async () => (await queue.get('p'))?.state === 'completed', {
      what: 'the parent to complete',
    });
    expect(seen).toEqual({ ok: 'ok' });
    expect((await queue.get('bad'))?.state).toBe('dead');
  });
});

describe('cancel', () => {
  it('cancelling a parent cancels its waiting children, and theirs', async () => {
    const name = uniqueQueue('flow-cancel');
    const queue = queueOf(name);
    await queue.addFlow({
      payload: { step: 'p' },
      opts: { id: 'p' },
      children: [
        { payload: { step: 'a' }, opts: { id: 'a', delay: 60_000 } },
        {
          payload: { step: 'm' },
          opts: { id: 'm' },
          children: [{ payload: { step: 'g' }, opts: { id: 'g', delay: 60_000 } }],
        },
      ],
    });
    expect(await queue.cancel('p')).toBe(true);
    for (const id of ['p', 'a', 'm', 'g']) expect((await queue.get(id))?.state).toBe('cancelled');
    const c = client();
    const keys = queueKeys(name);
    expect(await c.hgetall(keys.flows)).toEqual({});
    expect(await c.zcard(keys.flowsWaiting)).toBe(0);
    expect(await c.zcard(keys.waiting)).toBe(0);
    expect(await c.hget(keys.counters, 'cancelled')).toBe('4');
  });

  it('cancelling a child fails its parent (the default)', async () => {
    const name = uniqueQueue('flow-cancel-child');
    const queue = queueOf(name);
    await queue.addFlow({
      payload: { step: 'p' },
      opts: { id: 'p' },
      children: [{ payload: { step: 'a' }, opts: { id: 'a', delay: 60_000 } }],
    });
    expect(await queue.cancel('a')).toBe(true);
    const parent = await queue.get('p');
    expect(parent?.state).toBe('dead');
    expect(parent?.lastError?.message).toContain('child a is cancelled');
  });
});

describe('whole or nothing', () => {
  function wide(n: number): FlowJob<Step> {
    return {
      payload: { step: 'p' },
      children: Array.from({ length: n }, (_, i) => ({ payload: { step: `c${i}` } })),
    };
  }
  function deep(levels: number): FlowJob<Step> {
    let job: FlowJob<Step> = { payload: { step: 'leaf' } };
    for (let i = 1; i < levels; i++) job = { payload: { step: `l${i}` }, children: [job] };
    return job;
  }

  it('refuses a flow over a bound, or with an invalid option, and writes nothing', async () => {
    const name = uniqueQueue('flow-bounds');
    const queue = queueOf(name);
    const c = client();
    await expect(queue.addFlow(wide(MAX_FLOW_CHILDREN + 1))).rejects.toThrow(ValidationError);
    await expect(queue.addFlow(deep(MAX_FLOW_LEVELS + 1))).rejects.toThrow(/at most 8 levels/);
    await expect(
      queue.addFlow({
        payload: { step: 'p' },
        children: [{ payload: { step: 'a' }, opts: { attempts: 0 } }],
      }),
    ).rejects.toThrow(/flow\.children\[0\]: .*attempts/);
    await expect(
      queue.addFlow({ payload: { step: 'p' }, opts: { onChildFailure: 'retry' as 'fail' }, children: [] }),
    ).rejects.toThrow(/onChildFailure/);
    await expect(
      queue.addFlow({
        payload: { step: 'p' },
        children: [{ payload: { step: 'a' }, queue: uniqueQueue('none') }],
      }),
    ).rejects.toThrow(/no Queue or Worker has opened that queue yet/);
    expect(await c.keys(`dq:{${name}}:*`)).toEqual(expect.not.arrayContaining([queueKeys(name).records]));
    // At the bounds, it is accepted.
    const ok = await queue.addFlow(deep(MAX_FLOW_LEVELS));
    expect(ok.children).toHaveLength(1);
    const w = await queue.addFlow(wide(MAX_FLOW_CHILDREN));
    expect(w.children).toHaveLength(MAX_FLOW_CHILDREN);
  });

  it('an id that exists refuses the whole flow: FlowExistsError, nothing written', async () => {
    const name = uniqueQueue('flow-exists');
    const queue = queueOf(name);
    await queue.add({ step: 'x' }, { id: 'taken', delay: 60_000 });
    const c = client();
    const keys = queueKeys(name);
    const before = await c.hlen(keys.records);
    const err = await queue
      .addFlow({
        payload: { step: 'p' },
        opts: { id: 'p' },
        children: [{ payload: { step: 'a' }, opts: { id: 'taken' } }],
      })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FlowExistsError);
    expect((err as FlowExistsError).id).toBe('taken');
    expect(await c.hlen(keys.records)).toBe(before);
    expect(await c.exists(keys.flows, keys.flowsWaiting)).toBe(0);
    expect(await queue.get('p')).toBeNull();
  });
});

describe('a waiting child replaced by an add', () => {
  it("stays the flow's: its completion still counts for its parent", async () => {
    const name = uniqueQueue('flow-replace');
    const queue = queueOf(name);
    await queue.addFlow({
      payload: { step: 'p' },
      opts: { id: 'p' },
      children: [{ payload: { step: 'old' }, opts: { id: 'a', delay: 60_000 } }],
    });
    const replaced = await queue.add({ step: 'new' }, { id: 'a', onExists: 'replace' });
    expect(replaced.replaced).toBe(true);
    let seen: Record<string, unknown> | undefined;
    workerOf(name, async (job) => {
      if (job.payload.step === 'p') seen = await job.childResults();
      return job.payload.step;
    });
    await waitFor(async () => (await queue.get('p'))?.state === 'completed', {
      what: 'the parent to complete',
    });
    expect(seen).toEqual({ a: 'new' });
  });
});
