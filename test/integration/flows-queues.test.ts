/**
 * Flows with children in another queue (one Redis; README "Flows"): the children run in their
 * queue, the parent once after them with their results; a dead child fails the parent (or is
 * ignored); an ack resent counts once; cancelling the parent cancels its waiting children there;
 * a child that ended while no worker of its queue was left to deliver is delivered by the next
 * sweep; the refusals write nothing. Against a real redis-server, with the flow keys of both
 * queues asserted where a flow ends.
 */
import { afterEach, describe, expect, it } from 'vitest';
import {
  FlowQueueError,
  msgpackCodec,
  Queue,
  UnrecoverableError,
  Worker,
  type QueueOptions,
} from '../../src/index.js';
import { claim, type AckItem, type ClaimInput } from '../../src/operations/claim.js';
import { flowDeliver } from '../../src/operations/flow-deliver.js';
import { ZSET_LAYOUT } from '../../src/operations/wheel.js';
import { queueKeys, type QueueKeys } from '../../src/redis/keys.js';
import { inspector, uniqueQueue, useRedis, waitFor } from '../support/fixtures.js';

const redis = useRedis();
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

type Step = { step: string; fail?: boolean };

/** A Queue of `name`, opened (its settings recorded, as a flow of another queue needs them). */
async function opened(name: string, options: QueueOptions<Step> = {}): Promise<Queue<Step>> {
  const queue = new Queue<Step>(name, { connection: redis.url(), ...options });
  closers.push(() => queue.close());
  await queue.counts();
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

/** Two opened queues: the parent's and the children's. */
async function pair(label: string): Promise<{ a: string; b: string; qa: Queue<Step>; qb: Queue<Step> }> {
  const a = uniqueQueue(`${label}-a`);
  const b = uniqueQueue(`${label}-b`);
  return { a, b, qa: await opened(a), qb: await opened(b) };
}

describe('children in another queue', () => {
  it('run in their queue; the parent runs once after them, with their results', async () => {
    const { a, b, qa, qb } = await pair('xq');
    await qa.addFlow({
      payload: { step: 'parent' },
      opts: { id: 'p' },
      children: [
        { payload: { step: 'here' }, opts: { id: 'h' } },
        { payload: { step: 'there' }, opts: { id: 't' }, queue: b },
        // A child in b with its own child, in b too (its parent's queue, by default).
        {
          payload: { step: 'mid' },
          opts: { id: 'm' },
          queue: b,
          children: [{ payload: { step: 'leaf' }, opts: { id: 'l' } }],
        },
      ],
    });
    const held = await qa.get('p');
    expect(held?.state).toBe('waiting-children');
    expect(held?.children).toEqual([
      { id: 'h', state: 'scheduled' },
      { id: 't', state: 'scheduled', queue: b },
      { id: 'm', state: 'waiting-children', queue: b },
    ]);
    const there = await qb.get('t');
    expect(there?.parent).toBe('p');
    expect(there?.parentQueue).toBe(a);
    expect((await qb.get('l'))?.parent).toBe('m');
    expect((await qb.get('l'))?.parentQueue).toBeUndefined();
    expect(await qa.get('t')).toBeNull();

    const ran: string[] = [];
    let seen: Record<string, unknown> | undefined;
    workerOf(a, async (job) => {
      ran.push(`a:${job.payload.step}`);
      if (job.payload.step === 'parent') seen = await job.childResults();
      return { from: job.payload.step };
    });
    workerOf(b, async (job) => {
      ran.push(`b:${job.payload.step}`);
      return { from: job.payload.step };
    });
    await waitFor(async () => (await qa.get('p'))?.state === 'completed', { what: 'the parent to complete' });
    expect(ran.filter((step) => step === 'a:parent')).toHaveLength(1);
    expect(ran.indexOf('a:parent')).toBe(ran.length - 1);
    expect(ran.indexOf('b:leaf')).toBeLessThan(ran.indexOf('b:mid'));
    expect(seen).toEqual({ h: { from: 'here' }, t: { from: 'there' }, m: { from: 'mid' } });
    // Every flow field of both queues is gone: links, results, outbox entries.
    const c = client();
    expect(await c.hgetall(queueKeys(a).flows)).toEqual({});
    expect(await c.hgetall(queueKeys(b).flows)).toEqual({});
    expect(await c.zcard(queueKeys(a).flowsWaiting)).toBe(0);
  });

  it("a dead child in another queue makes the parent dead (onChildFailure 'fail')", async () => {
    const { a, b, qa } = await pair('xq-fail');
    await qa.addFlow({
      payload: { step: 'parent' },
      opts: { id: 'p' },
      children: [{ payload: { step: 'bad', fail: true }, opts: { id: 'bad' }, queue: b }],
    });
    const ran: string[] = [];
    workerOf(a, async (job) => void ran.push(job.payload.step));
    workerOf(b, async () => {
      throw new UnrecoverableError('no');
    });
    await waitFor(async () => (await qa.get('p'))?.state === 'dead', { what: 'the parent to die' });
    const parent = await qa.get('p');
    expect(parent?.lastError).toMatchObject({ name: 'ChildFailedError', child: 'bad', childQueue: b });
    expect(parent?.lastError?.message).toContain(`child bad in queue ${b} is dead`);
    expect(ran).toEqual([]);
    const c = client();
    expect(await c.hgetall(queueKeys(a).flows)).toEqual({});
    expect(await c.hgetall(queueKeys(b).flows)).toEqual({});
  });

  it("with onChildFailure 'ignore' the parent runs without the dead child's result", async () => {
    const { a, b, qa } = await pair('xq-ignore');
    await qa.addFlow({
      payload: { step: 'parent' },
      opts: { id: 'p', onChildFailure: 'ignore' },
      children: [
        { payload: { step: 'ok' }, opts: { id: 'ok' }, queue: b },
        { payload: { step: 'bad', fail: true }, opts: { id: 'bad' }, queue: b },
      ],
    });
    let seen: Record<string, unknown> | undefined;
    workerOf(a, async (job) => {
      seen = await job.childResults();
    });
    workerOf(b, async (job) => {
      if (job.payload.fail) throw new UnrecoverableError('no');
      return job.payload.step;
    });
    await waitFor(async () => (await qa.get('p'))?.state === 'completed', { what: 'the parent to complete' });
    expect(seen).toEqual({ ok: 'ok' });
  });
});

/** Claim up to `limit` jobs of `keys` as holder 1 would, carrying `acks`. */
function claimIn(
  c: ReturnType<typeof client>,
  keys: QueueKeys,
  limit: number,
  more: Partial<ClaimInput> = {},
) {
  return claim(c, keys, {
    strategy: 'range',
    limit,
    leaseMs: 30_000,
    holder: 1,
    deadMaxCount: 1000,
    deadMaxAgeMs: 0,
    rate: { max: 0, perMs: 0 },
    eventsCap: 0,
    zmscore: true,
    layout: ZSET_LAYOUT,
    ...more,
  });
}

describe('delivery', () => {
  it('an ack resent counts once; a child no worker delivered is delivered by the next sweep', async () => {
    const { a, b, qa } = await pair('xq-ack');
    await qa.addFlow({
      payload: { step: 'parent' },
      opts: { id: 'p' },
      children: [
        { payload: { step: 'one' }, opts: { id: 'one' }, queue: b },
        { payload: { step: 'two' }, opts: { id: 'two' }, queue: b },
      ],
    });
    const c = client();
    const kb = queueKeys(b);
    // A worker of b that runs 'one' and is gone before it delivers: its claim and ack, by hand.
    const claimed = await claimIn(c, kb, 1);
    const job = claimed.jobs[0]!;
    expect(job.id).toBe('one');
    const ack: AckItem = {
      member: job.member,
      knownDeadline: job.deadline,
      hadError: false,
      progressed: false,
      header: job.header,
      flow: true,
      result: Buffer.from('"r-one"'),
    };
    const first = await claimIn(c, kb, 0, { acks: [ack] });
    expect(first.acks[0]?.status).toBe('ok');
    // Resent (its reply lost): answered 'already', and the outbox holds the one entry.
    const again = await claimIn(c, kb, 0, { acks: [ack] });
    expect(again.acks[0]?.status).toBe('already');
    expect(await c.hget(kb.flows, 'x\0one')).toBe('1"r-one"');
    expect((await qa.get('p'))?.state).toBe('waiting-children');

    // Delivered by hand twice: counted once (the second finds no entry), so the parent still
    // waits for 'two'.
    const parent = { name: a, keys: queueKeys(a), eventsCap: 0, groupConcurrency: 0 };
    const child = { name: b, keys: kb };
    expect(await flowDeliver(c, { childId: 'one', child, parent })).toBe('applied');
    expect(await flowDeliver(c, { childId: 'one', child, parent })).toBeNull();
    expect(await c.hget(queueKeys(a).flows, `p\0p`)).toBe('1');
    expect((await qa.get('p'))?.state).toBe('waiting-children');

    // 'two' likewise, but not delivered: no worker of b listens.
    const second = await claimIn(c, kb, 1);
    const two = second.jobs[0]!;
    const acked = await claimIn(c, kb, 0, {
      acks: [
        {
          ...ack,
          member: two.member,
          knownDeadline: two.deadline,
          header: two.header,
          result: Buffer.from('"r-two"'),
        },
      ],
    });
    expect(acked.acks[0]?.status).toBe('ok');
    expect(await c.hget(kb.flows, 'x\0two')).toBe('1"r-two"');
    expect((await qa.get('p'))?.state).toBe('waiting-children');

    // A worker of b starts: its sweep delivers 'two', and the parent runs with both results.
    let seen: Record<string, unknown> | undefined;
    workerOf(a, async (j) => {
      seen = await j.childResults();
    });
    workerOf(b, async () => undefined);
    await waitFor(async () => (await qa.get('p'))?.state === 'completed', { what: 'the parent to complete' });
    expect(seen).toEqual({ one: 'r-one', two: 'r-two' });
    expect(await c.hgetall(kb.flows)).toEqual({});
    expect(await c.hgetall(queueKeys(a).flows)).toEqual({});
  });
});

describe('cancel', () => {
  it('cancelling the parent cancels its waiting children in other queues, and theirs', async () => {
    const { a, b, qa, qb } = await pair('xq-cancel');
    // A third queue below the second: cancel.lua asks for b's keys, then for c's.
    const c3 = uniqueQueue('xq-cancel-c');
    const qc = await opened(c3);
    await qa.addFlow({
      payload: { step: 'p' },
      opts: { id: 'p' },
      children: [
        { payload: { step: 'here' }, opts: { id: 'h', delay: '1h' } },
        {
          payload: { step: 'mid' },
          opts: { id: 'm', delay: '1h' },
          queue: b,
          children: [
            { payload: { step: 'leaf' }, opts: { id: 'l', delay: '1h' } },
            { payload: { step: 'far' }, opts: { id: 'f', delay: '1h' }, queue: c3 },
          ],
        },
      ],
    });
    expect(await qb.get('f')).toBeNull();
    expect((await qc.get('f'))?.parentQueue).toBe(b);
    expect(await qa.cancel('p')).toBe(true);
    expect((await qa.get('p'))?.state).toBe('cancelled');
    expect((await qa.get('h'))?.state).toBe('cancelled');
    expect((await qb.get('m'))?.state).toBe('cancelled');
    expect((await qb.get('l'))?.state).toBe('cancelled');
    expect((await qc.get('f'))?.state).toBe('cancelled');
    expect(await qb.counts()).toMatchObject({ scheduled: 0, cancelled: 2 });
    expect(await qc.counts()).toMatchObject({ scheduled: 0, cancelled: 1 });
    const c = client();
    for (const name of [a, b, c3]) {
      expect(await c.hgetall(queueKeys(name).flows), name).toEqual({});
      expect(await c.zcard(queueKeys(name).flowsWaiting), name).toBe(0);
    }
  });

  it("cancelling a child in another queue fails its parent at once: the cancel's sweep delivers", async () => {
    const { a, b, qa, qb } = await pair('xq-cancel-child');
    await qa.addFlow({
      payload: { step: 'p' },
      opts: { id: 'p' },
      children: [
        { payload: { step: 'stays' }, opts: { id: 's', delay: '1h' } },
        { payload: { step: 'goes' }, opts: { id: 'g', delay: '1h' }, queue: b },
      ],
    });
    // No worker of either queue runs: the delivery is queue b's cancel's own sweep.
    expect(await qb.cancel('g')).toBe(true);
    const parent = await qa.get('p');
    expect(parent?.state).toBe('dead');
    expect(parent?.lastError).toMatchObject({ name: 'ChildFailedError', child: 'g', childQueue: b });
    const c = client();
    expect(await c.hgetall(queueKeys(b).flows)).toEqual({});
    expect(await c.hgetall(queueKeys(a).flows)).toEqual({});
  });
});

describe('refusals', () => {
  it('refuses a child queue that is partitioned, a wheel, of another codec or never opened; writes nothing', async () => {
    const a = uniqueQueue('xq-refuse-a');
    const qa = await opened(a);
    const c = client();
    const cases: Array<{ options: QueueOptions<Step>; reason: string; open: boolean }> = [
      { options: { partitions: 2 }, reason: 'partitioned', open: true },
      { options: { strategy: 'wheel' }, reason: 'wheel', open: true },
      { options: { codec: msgpackCodec }, reason: 'codec', open: true },
      { options: {}, reason: 'unknown', open: false },
    ];
    for (const { options, reason, open } of cases) {
      const b = uniqueQueue(`xq-refuse-${reason}`);
      if (open) await opened(b, options);
      const before = (await c.keys(`dq:{${b}*`)).sort();
      const err = await qa
        .addFlow({
          payload: { step: 'p' },
          opts: { id: 'p' },
          children: [{ payload: { step: 'c' }, queue: b }],
        })
        .catch((e: unknown) => e);
      expect(err, reason).toBeInstanceOf(FlowQueueError);
      expect((err as FlowQueueError).reason).toBe(reason);
      expect((err as FlowQueueError).queue).toBe(b);
      expect((await c.keys(`dq:{${b}*`)).sort()).toEqual(before);
      expect(await c.exists(queueKeys(a).records, queueKeys(a).flows)).toBe(0);
    }
  });
});
