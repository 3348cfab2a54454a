/**
 * The views of a flow's parent waiting for its children (state 'waiting-children', the fw set):
 * counted apart by counts.lua (never as scheduled, due, next due or in the due histogram), listed
 * by list.lua and found by search.lua by their own due time, and gone from all of them once
 * released or cancelled. Against a real redis-server.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Queue, ValidationError, Worker } from '../../src/index.js';
import { counts } from '../../src/operations/counts.js';
import { ZSET_LAYOUT } from '../../src/operations/wheel.js';
import { queueKeys } from '../../src/redis/keys.js';
import { runScript, script } from '../../src/redis/scripts.js';
import { inspector, uniqueQueue, useRedis, waitFor } from '../support/fixtures.js';

const redis = useRedis();
const closers: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

function queueOf(name: string): Queue<string> {
  const queue = new Queue<string>(name, { connection: redis.url() });
  closers.push(() => queue.close());
  return queue;
}

function client(): ReturnType<typeof inspector> {
  const r = inspector(redis.url());
  closers.push(() => r.quit());
  return r;
}

/** Two flows: parents p1 (due at once) and p2 (due in 10 min), each with children due in an hour. */
async function twoFlows(queue: Queue<string>): Promise<void> {
  await queue.addFlow({
    payload: 'p1',
    opts: { id: 'p1' },
    children: [
      { payload: 'a', opts: { id: 'p1-a', delay: '1h' } },
      { payload: 'b', opts: { id: 'p1-b', delay: '1h' } },
    ],
  });
  await queue.addFlow({
    payload: 'p2',
    opts: { id: 'p2', delay: '10m', group: 'acme' },
    children: [{ payload: 'c', opts: { id: 'p2-c', delay: '1h' } }],
  });
}

describe('counts of flow parents waiting for their children', () => {
  it('counts them as waitingChildren only: not scheduled, due, next due or in the histogram', async () => {
    const name = uniqueQueue('fviews');
    const queue = queueOf(name);
    await twoFlows(queue);
    expect(await queue.counts()).toEqual({
      scheduled: 3,
      due: 0,
      held: 0,
      active: 0,
      dead: 0,
      completed: 0,
      cancelled: 0,
      waitingChildren: 2,
    });
    const r = client();
    const got = await counts(r, queueKeys(name), ZSET_LAYOUT, { histogram: { sliceMs: 60_000, slices: 20 } });
    // p1 is due already and p2 within the histogram: neither is due, next or in a slice.
    const childDue = (await queue.get('p1-a'))!.runAt.getTime();
    expect(got.nextDue).toBe(childDue);
    expect(got.histogram).toEqual({ overdue: 0, counts: Array.from({ length: 20 }, () => 0) });
    expect(got.waitingChildren).toBe(2);
  });
});

describe('list and search of flow parents waiting for their children', () => {
  it('lists them by their own due time, a page at a time, and refuses a group', async () => {
    const name = uniqueQueue('fviews');
    const queue = queueOf(name);
    await twoFlows(queue);
    const listed = await queue.list('waiting-children');
    expect(listed.map((j) => [j.id, j.state, j.payload])).toEqual([
      ['p1', 'waiting-children', 'p1'],
      ['p2', 'waiting-children', 'p2'],
    ]);
    expect(listed[1]!.runAt).toEqual((await queue.get('p2'))!.runAt);
    expect(listed[1]!.group).toBe('acme');
    expect((await queue.list('waiting-children', { offset: 1, limit: 1 })).map((j) => j.id)).toEqual(['p2']);
    expect((await queue.list('scheduled')).map((j) => j.id).sort()).toEqual(['p1-a', 'p1-b', 'p2-c']);
    const refused = await queue.list('waiting-children', { group: 'acme' }).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(ValidationError);
    expect((refused as Error).message).toMatch(
      /flow parents waiting for their children are not kept by group/,
    );
  });

  it('finds them by state, id prefix and time range; with every state, before the waiting jobs', async () => {
    const name = uniqueQueue('fviews');
    const queue = queueOf(name);
    await twoFlows(queue);
    const ids = async (options: Parameters<Queue<string>['search']>[0]) =>
      (await queue.search(options)).jobs.map((j) => j.id);
    expect(await ids({ state: 'waiting-children' })).toEqual(['p1', 'p2']);
    expect(await ids({ state: 'waiting-children', idPrefix: 'p2' })).toEqual(['p2']);
    const p2Due = (await queue.get('p2'))!.runAt.getTime();
    expect(await ids({ state: 'waiting-children', from: p2Due, to: p2Due })).toEqual(['p2']);
    expect(await ids({ state: 'waiting-children', to: p2Due - 1 })).toEqual(['p1']);
    expect(await ids({})).toEqual(['p1', 'p2', 'p1-a', 'p1-b', 'p2-c']);
    // Pages through the parents and on into the waiting jobs with the cursor.
    const first = await queue.search({ limit: 1 });
    expect(first.jobs.map((j) => [j.id, j.state])).toEqual([['p1', 'waiting-children']]);
    const second = await queue.search({ limit: 2, cursor: first.cursor });
    expect(second.jobs.map((j) => j.id)).toEqual(['p2', 'p1-a']);
    // A group search looks where grouped jobs are kept: a parent waiting for children is not.
    expect(await ids({ group: 'acme' })).toEqual([]);
    await expect(queue.search({ group: 'acme', state: 'waiting-children' })).rejects.toThrow(
      /flow parents waiting for their children are not kept by group/,
    );
  });

  it('list.lua and search.lua read fw through KEYS only, refusing another KEYS count', async () => {
    const name = uniqueQueue('fviews');
    const queue = queueOf(name);
    await twoFlows(queue);
    const k = queueKeys(name);
    const base = [
      k.records,
      k.waiting,
      k.prioWaiting,
      k.prioReady,
      k.leases,
      k.completed,
      k.cancelled,
      k.dead,
    ];
    const tail = [k.errors, k.holders, k.progress];
    const r = client();
    await expect(
      runScript(r, script('list'), [...base, ...tail], ['waiting-children', 0, 10, 0]),
    ).rejects.toThrow(/DELAYQ_BAD_ARG\): KEYS has 11 keys; list waiting-children takes 12/);
    const rows = (await runScript(
      r,
      script('list'),
      [...base, ...tail, k.flowsWaiting],
      ['waiting-children', 0, 10, 0],
    )) as unknown[];
    expect(rows.filter((_, i) => i % 7 === 0).map(String)).toEqual(['p1', 'p2']);
    await expect(
      runScript(
        r,
        script('search'),
        [k.records, k.errors, k.holders, k.progress, k.flowsWaiting],
        ['F', 0, 10, '', '', '', '', 10, 10],
      ),
    ).rejects.toThrow(/ARGV\[1\] source F is not one of s p r g f a c x d w/);
  });

  it('leaves every view once the parent is released, and once it is cancelled', async () => {
    const name = uniqueQueue('fviews');
    const queue = queueOf(name);
    await queue.addFlow({
      payload: 'p',
      opts: { id: 'p', delay: '1h' },
      children: [{ payload: 'c', opts: { id: 'c' } }],
    });
    await queue.addFlow({
      payload: 'q',
      opts: { id: 'q' },
      children: [{ payload: 'd', opts: { id: 'd', delay: '2h' } }],
    });
    expect((await queue.counts()).waitingChildren).toBe(2);
    const ran: string[] = [];
    const worker = new Worker<string>(name, async (job) => void ran.push(job.id), {
      connection: redis.url(),
    });
    closers.push(() => worker.close({ timeoutMs: 2_000 }));
    // c runs at once: p is released into the schedule at its own due time, an hour away.
    await waitFor(async () => (await queue.get('p'))?.state === 'scheduled', { what: 'p released' });
    expect(ran).toEqual(['c']);
    expect((await queue.list('waiting-children')).map((j) => j.id)).toEqual(['q']);
    expect((await queue.list('scheduled')).map((j) => j.id)).toEqual(['p', 'd']);
    expect(await queue.counts()).toMatchObject({ scheduled: 2, waitingChildren: 1, completed: 1 });
    // Cancelling q (as the dashboard's Cancel does) cancels its waiting child d with it.
    expect(await queue.cancel('q')).toBe(true);
    expect((await queue.list('waiting-children')).map((j) => j.id)).toEqual([]);
    expect((await queue.search({ state: 'waiting-children' })).jobs).toEqual([]);
    expect(await queue.counts()).toMatchObject({ scheduled: 1, waitingChildren: 0, cancelled: 2 });
    expect((await queue.get('d'))?.state).toBe('cancelled');
    expect(await client().zcard(queueKeys(name).flowsWaiting)).toBe(0);
  });
});
