/**
 * A claim reply that comes back late (src/worker/late-claim.ts): the worker confirms the leases
 * before starting the jobs, and starts none whose lease is gone. Found by the chaos run with seed 7,
 * where a reply took 2.9 s against a 2 s lease and the job ran in two places.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { extend } from '../../src/operations/extend.js';
import { confirmLateClaim, type ConfirmLeases } from '../../src/worker/late-claim.js';
import type { QueueKeys } from '../../src/redis/keys.js';
import { addJobs, claimJobs, freshKeys, job, startFixture, stopFixture, type Fixture } from './support.js';

let f: Fixture;
beforeAll(async () => {
  f = await startFixture();
});
afterAll(async () => {
  await stopFixture(f);
});

async function serverNow(): Promise<number> {
  const [s, us] = await f.client.time();
  return Number(s) * 1000 + Math.floor(Number(us) / 1000);
}

/** The real extend, counting its calls. */
function counted(keys: QueueKeys, leaseMs: number): { confirm: ConfirmLeases; calls: () => number } {
  let calls = 0;
  return {
    confirm: (members) => {
      calls += 1;
      return extend(f.client, keys, leaseMs, members, true);
    },
    calls: () => calls,
  };
}

describe('a claim whose reply came back late', () => {
  it('a quick reply starts its jobs as claimed, without asking Redis again', async () => {
    const keys = freshKeys('late-quick');
    await addJobs(f, keys, [job('a')]);
    const out = await claimJobs(f, keys, 1, { leaseMs: 10_000 });
    const spy = counted(keys, 10_000);
    const confirmed = await confirmLateClaim(out, 4_000, 10_000, spy.confirm);
    expect(spy.calls()).toBe(0);
    expect(confirmed.jobs.map((j) => j.id)).toStrictEqual(['a']);
    expect(confirmed.lateLost).toStrictEqual([]);
  });

  it('a slow reply whose lease still holds: the lease is renewed first, then the job starts', async () => {
    const keys = freshKeys('late-held');
    await addJobs(f, keys, [job('a')]);
    const out = await claimJobs(f, keys, 1, { leaseMs: 10_000 });
    const spy = counted(keys, 10_000);
    const confirmed = await confirmLateClaim(out, 6_000, 10_000, spy.confirm);
    expect(spy.calls()).toBe(1);
    expect(confirmed.lateLost).toStrictEqual([]);
    expect(confirmed.jobs).toHaveLength(1);
    expect(confirmed.jobs[0]!.deadline).toBeGreaterThanOrEqual(out.jobs[0]!.deadline);
    expect(Number(await f.client.zscore(keys.leases, out.jobs[0]!.member))).toBe(confirmed.jobs[0]!.deadline);
  });

  it('a reply that came after the lease ended: the job is not started, and its new holder keeps it', async () => {
    const keys = freshKeys('late-lost');
    await addJobs(f, keys, [job('a'), job('b')]);
    const first = await claimJobs(f, keys, 2, { leaseMs: 50 });
    expect(first.jobs.map((j) => j.id).sort()).toStrictEqual(['a', 'b']);
    // Job b's holder renews in time; job a's lease runs out and another worker's claim takes it.
    const spyHeld = counted(keys, 60_000);
    await spyHeld.confirm([first.jobs.find((j) => j.id === 'b')!.member]);
    while ((await serverNow()) <= first.jobs[0]!.deadline) await new Promise((r) => setTimeout(r, 10));
    const second = await claimJobs(f, keys, 1, { leaseMs: 60_000, holder: 2 });
    expect(second.jobs.map((j) => j.id)).toStrictEqual(['a']);

    const spy = counted(keys, 50);
    const confirmed = await confirmLateClaim(first, 80, 50, spy.confirm);
    expect(spy.calls()).toBe(1);
    expect(confirmed.lateLost).toStrictEqual(['a']);
    expect(confirmed.jobs.map((j) => j.id)).toStrictEqual(['b']);
    // The new holder's lease is untouched: the late worker's extend carried its own member only.
    expect(Number(await f.client.zscore(keys.leases, second.jobs[0]!.member))).toBe(second.jobs[0]!.deadline);
  });
});
