/**
 * Flows per claim strategy (queue.addFlow, docs/ARCHITECTURE.md §4.15), checked where they are
 * decided: by the times the scripts wrote, read by the Redis clock, not by what a worker reports.
 * A parent is never claimed before its last child completed (its lease start, from the claim
 * script's TIME, against the child's completion score in the completed set, from the ack's), and
 * a child's completion counts once for its parent, even when its ack is sent again after it
 * applied (what a worker does when the reply was lost). The wheel keeps no flows: addFlow is
 * refused there, writing nothing.
 *
 * Registered by zpopmin.test.ts, range.test.ts and wheel.test.ts, each on a redis-server of its
 * own started with the same options as its conformance suite's.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Queue, ValidationError, Worker } from '../../src/index.js';
import { ack, ackOnly, type AckItem, type AckSettings } from '../../src/operations/ack.js';
import { childResults } from '../../src/operations/child-results.js';
import { claim, type ClaimedJob, type ClaimInput } from '../../src/operations/claim.js';
import { ZSET_LAYOUT } from '../../src/operations/wheel.js';
import type { Strategy } from '../../src/redis/capabilities.js';
import { queueKeys } from '../../src/redis/keys.js';
import type { RedisServerOptions } from '../support/redis-server.js';
import { inspector, uniqueQueue, useRedis, waitFor } from '../support/fixtures.js';

/** Register the flow tests of `strategy` on a redis-server started with `server` options. */
export function flowTests(strategy: Strategy, server: RedisServerOptions = {}): void {
  const redis = useRedis(server);
  const closers: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });

  function queueOf(name: string): Queue<string> {
    const queue = new Queue<string>(name, { connection: redis.url(), strategy });
    closers.push(() => queue.close());
    return queue;
  }

  function client(): ReturnType<typeof inspector> {
    const r = inspector(redis.url());
    closers.push(() => r.quit());
    return r;
  }

  describe(`flows: ${strategy}`, () => {
    if (strategy === 'wheel') {
      it('addFlow is refused with the wheel strategy, naming it, and writes nothing', async () => {
        const name = uniqueQueue('flow-wheel');
        const queue = new Queue<string>(name, { connection: redis.url(), strategy: 'wheel' });
        closers.push(() => queue.close());
        const refused = await queue
          .addFlow({ payload: 'p', opts: { id: 'p' }, children: [{ payload: 'c', opts: { id: 'c' } }] })
          .catch((err: unknown) => err);
        expect(refused).toBeInstanceOf(ValidationError);
        expect((refused as ValidationError).message).toMatch(
          /addFlow is not supported with the wheel strategy.*use the zpopmin or range strategy/,
        );
        expect((refused as ValidationError).issues.map((i) => i.path)).toEqual(['strategy']);
        const keys = queueKeys(name);
        expect(await client().exists(keys.records, keys.flows, keys.flowsWaiting, keys.ready)).toBe(0);
        expect(await queue.counts()).toMatchObject({ scheduled: 0, waitingChildren: 0 });
      });
      return;
    }

    /** A direct claim of up to 10 jobs, with routine events on. */
    const claimInput = (): ClaimInput => ({
      strategy,
      limit: 10,
      leaseMs: 60_000,
      holder: 1,
      deadMaxCount: 1_000,
      deadMaxAgeMs: 0,
      rate: { max: 0, perMs: 0 },
      eventsCap: 1_000,
      zmscore: true,
      layout: ZSET_LAYOUT,
    });
    const ackSettings = (): AckSettings => {
      const settings: Partial<ClaimInput> = claimInput();
      delete settings.limit;
      return settings as AckSettings;
    };
    /** The ack a worker sends for `job`: a flow's job carries the flag that tells its parent. */
    const ackOf = (job: ClaimedJob, result?: string): AckItem => ({
      member: job.member,
      knownDeadline: job.deadline,
      hadError: job.header.hasError,
      progressed: false,
      ...(job.header.flow && { flow: true as const }),
      ...(result !== undefined && { result: Buffer.from(JSON.stringify(result)) }),
    });
    /** The claim time the script wrote into a lease member "<claims>.<claimed at>|<id>". */
    const leaseStartOf = (member: string): number =>
      Number(member.slice(0, member.indexOf('|')).split('.')[1]);

    it('a parent is not claimed while a child has not completed, and its lease starts no earlier than the last completion, by the Redis clock', async () => {
      const name = uniqueQueue('flow-order');
      const queue = queueOf(name);
      const keys = queueKeys(name);
      const r = client();
      // Everything due at once: only the flow holds the parent back.
      await queue.addFlow({
        payload: 'parent',
        opts: { id: 'p' },
        children: ['c1', 'c2', 'c3'].map((id) => ({ payload: id, opts: { id } })),
      });
      const first = await claim(r, keys, claimInput());
      expect(first.jobs.map((j) => j.id).sort()).toEqual(['c1', 'c2', 'c3']);
      const child = (id: string) => first.jobs.find((j) => j.id === id)!;
      for (const [i, id] of ['c1', 'c2'].entries()) {
        expect(await ack(r, keys, ackOf(child(id), id), ackSettings())).toBe('ok');
        // A claim after each completion but the last: the parent still waits for its children.
        const again = await claim(r, keys, claimInput());
        expect(again.jobs.map((j) => j.id)).toEqual([]);
        expect((await queue.get('p'))?.state).toBe('waiting-children');
        expect(await queue.counts()).toMatchObject({ scheduled: 0, active: 2 - i, waitingChildren: 1 });
      }
      // The last child's ack and a claim in one call (as a worker sends them): the parent is
      // released by the ack and may be leased by the same call, not before it.
      const last = await claim(r, keys, { ...claimInput(), acks: [ackOf(child('c3'), 'c3')] });
      expect(last.acks).toEqual([{ status: 'ok' }]);
      expect(last.jobs.map((j) => j.id)).toEqual(['p']);
      const completedAt = await Promise.all(
        ['c1', 'c2', 'c3'].map(async (id) => Number(await r.zscore(keys.completed, id))),
      );
      const lastCompletion = Math.max(...completedAt);
      const parent = last.jobs[0]!;
      expect(leaseStartOf(parent.member)).toBeGreaterThanOrEqual(lastCompletion);
      expect(parent.header.claimedAt).toBe(leaseStartOf(parent.member));
      expect(await queue.counts()).toMatchObject({ waitingChildren: 0, active: 1 });
    });

    it("a worker's parent starts after its children completed at different times, by the Redis clock", async () => {
      const name = uniqueQueue('flow-worker');
      const queue = queueOf(name);
      const keys = queueKeys(name);
      const r = client();
      const delays: Record<string, number> = { c1: 0, c2: 30, c3: 120 };
      await queue.addFlow({
        payload: 'parent',
        opts: { id: 'p' },
        children: Object.entries(delays).map(([id, delay]) => ({ payload: id, opts: { id, delay } })),
      });
      let parentLease = Number.NaN;
      let results: Record<string, unknown> | undefined;
      const worker = new Worker<string>(
        name,
        async (job) => {
          if (job.id !== 'p') return job.payload;
          // The record's claim block: the lease start claim.lua wrote from TIME.
          parentLease = (await queue.get('p'))?.lease?.startedAt.getTime() ?? Number.NaN;
          results = await job.childResults();
          return 'done';
        },
        { connection: redis.url(), strategy, concurrency: 4 },
      );
      closers.push(() => worker.close({ timeoutMs: 2_000 }));
      await waitFor(async () => (await queue.get('p'))?.state === 'completed', {
        what: 'the parent to complete',
      });
      const completedAt = await Promise.all(
        Object.keys(delays).map(async (id) => Number(await r.zscore(keys.completed, id))),
      );
      expect(completedAt.every((at) => at > 0)).toBe(true);
      expect(parentLease).toBeGreaterThanOrEqual(Math.max(...completedAt));
      expect(results).toEqual({ c1: 'c1', c2: 'c2', c3: 'c3' });
    });

    it("a child's ack sent again after it applied is counted once: the parent waits for its other children, and its childResults hold each child once", async () => {
      const name = uniqueQueue('flow-resent');
      const queue = queueOf(name);
      const keys = queueKeys(name);
      const r = client();
      await queue.addFlow({
        payload: 'parent',
        opts: { id: 'p' },
        children: ['c1', 'c2'].map((id) => ({ payload: id, opts: { id } })),
      });
      const { jobs } = await claim(r, keys, claimInput());
      const child = (id: string) => jobs.find((j) => j.id === id)!;
      expect(await ack(r, keys, ackOf(child('c1'), 'one'), ackSettings())).toBe('ok');
      // The reply was lost, so the worker sends the same ack again: once alone, once twice in a call.
      expect(await ack(r, keys, ackOf(child('c1'), 'one'), ackSettings())).toBe('already');
      expect(
        await ackOnly(r, keys, [ackOf(child('c1'), 'one'), ackOf(child('c1'), 'one')], ackSettings()),
      ).toEqual([{ status: 'already' }, { status: 'already' }]);
      // Counted twice, c1 would have released the parent (two children): it still waits for c2.
      expect((await queue.get('p'))?.state).toBe('waiting-children');
      expect(await r.zscore(keys.flowsWaiting, 'p')).not.toBeNull();
      expect(await r.hget(keys.flows, 'p\0p')).toBe('1');
      expect((await claim(r, keys, claimInput())).jobs).toEqual([]);
      expect(await childResults(r, keys, 'p')).toEqual([
        { id: 'c1', end: { kind: 'completed', result: Buffer.from('"one"') } },
        { id: 'c2', end: { kind: 'pending' } },
      ]);
      // c2's ack, sent twice in one call: applied once, and the parent is released and leased.
      const out = await claim(r, keys, {
        ...claimInput(),
        acks: [ackOf(child('c2'), 'two'), ackOf(child('c2'), 'two')],
      });
      expect(out.acks).toEqual([{ status: 'ok' }, { status: 'already' }]);
      expect(out.jobs.map((j) => j.id)).toEqual(['p']);
      expect(await childResults(r, keys, 'p')).toEqual([
        { id: 'c1', end: { kind: 'completed', result: Buffer.from('"one"') } },
        { id: 'c2', end: { kind: 'completed', result: Buffer.from('"two"') } },
      ]);
      // Sent again after the parent was released: nothing counts, nothing is released twice.
      expect(await ack(r, keys, ackOf(child('c2'), 'two'), ackSettings())).toBe('already');
      expect(await queue.counts()).toMatchObject({ scheduled: 0, active: 1, waitingChildren: 0 });
      expect(await r.zcard(keys.leases)).toBe(1);
    });
  });
}
