import { describe, expect, it } from 'vitest';
import { ServerClock, Sleeper } from '../clock.js';
import type { ClaimedJob, ClaimOutput, UnreadableJob } from '../operations/claim.js';
import { ClaimLoop } from './claim-loop.js';

/** A loop over a stand-in source that answers each claim with `reply(limit)`. */
function loopWith(reply: (limit: number) => ClaimOutput, free = 3, claimAheadMs = 0) {
  const limits: number[] = [];
  const aheads: boolean[] = [];
  const started: string[] = [];
  const loop = new ClaimLoop({
    source: {
      claim: async (limit, ahead) => {
        limits.push(limit);
        aheads.push(ahead ?? false);
        return reply(limit);
      },
      pause: async () => {},
    },
    freeSlots: () => free,
    waitForSlot: () => new Promise(() => {}),
    start: (job) => started.push(job.id),
    bury: (job) => started.push(`buried ${job.id}`),
    clock: new ServerClock(),
    sleeper: new Sleeper(),
    maxSleepMs: 10_000,
    claimAheadMs,
    onError: () => {},
  });
  return { loop, limits, aheads, started };
}

/** A claim reply of `jobs`, next due at `nextAt`, at server time 1000. */
function reply(nextAt: number, taken: ClaimedJob[], unreadable: UnreadableJob[] = []): ClaimOutput {
  return { now: 1_000, nextAt, jobs: taken, unreadable, acks: [], paused: false };
}

const jobs = (n: number): ClaimedJob[] =>
  Array.from({ length: n }, (_, i) => ({ id: `j${i}` }) as ClaimedJob);

describe('ClaimLoop.runOnce', () => {
  it('claims with every free slot, starts what came, and goes on at once when all slots were filled', async () => {
    const { loop, limits, started } = loopWith(() => reply(1_000, jobs(3)));
    expect(await loop.runOnce()).toBe(0);
    expect(limits).toEqual([3]);
    expect(started).toEqual(['j0', 'j1', 'j2']);
  });

  it('sleeps the safety timer when the source has nothing scheduled', async () => {
    const { loop } = loopWith(() => reply(-1, []));
    expect(await loop.runOnce()).toBe(10_000);
  });

  it('sleeps until the next due time, by the server clock of the reply', async () => {
    const { loop } = loopWith(() => reply(1_500, jobs(1)));
    const sleep = await loop.runOnce();
    // 500 ms less what elapsed locally since the reply (well under 50 ms).
    expect(sleep).toBeLessThanOrEqual(500);
    expect(sleep).toBeGreaterThan(450);
  });

  it('buries a job whose record it cannot read, and counts it as taken', async () => {
    const unreadable = { id: 'u', member: '1.1|u', error: new Error('format byte 0x02') };
    const { loop, started } = loopWith(() => reply(1_000, jobs(2), [unreadable]));
    expect(await loop.runOnce()).toBe(0);
    expect(started).toEqual(['j0', 'j1', 'buried u']);
  });

  it('with claim ahead, sleeps until that long before the due time and then claims ahead, once', async () => {
    let nextAt = 1_500;
    const { loop, aheads } = loopWith(() => reply(nextAt, jobs(1)), 3, 2);
    const sleep = await loop.runOnce();
    // 500 ms less the 2 ms ahead, less what elapsed locally since the reply.
    expect(sleep).toBeLessThanOrEqual(498);
    expect(sleep).toBeGreaterThan(448);
    // The claim after that sleep reaches ahead; the reply names a due time within 2 ms, so the
    // claim after it is a plain one at that due time.
    nextAt = 1_001;
    await loop.runOnce();
    await loop.runOnce();
    expect(aheads).toEqual([false, true, false]);
  });

  it('never sleeps 0 ms when nothing came, so it cannot spin', async () => {
    const { loop } = loopWith(() => reply(1_000, []));
    expect(await loop.runOnce()).toBe(1);
  });
});

describe('ClaimLoop pauses', () => {
  /** Run the loop over `replies` (one per claim, the last repeated) and record each pause. */
  async function pausesOf(replies: ClaimOutput[]): Promise<Array<[number, boolean]>> {
    const pauses: Array<[number, boolean]> = [];
    const clock = new ServerClock();
    let claims = 0;
    let done: () => void = () => {};
    const finished = new Promise<void>((resolve) => (done = resolve));
    const loop = new ClaimLoop({
      source: {
        claim: async () => replies[Math.min(claims++, replies.length - 1)]!,
        pause: async (ms, approach) => {
          pauses.push([ms, approach ?? false]);
          if (pauses.length === replies.length) done();
        },
      },
      freeSlots: () => 2,
      waitForSlot: () => new Promise(() => {}),
      start: () => {},
      bury: () => {},
      clock,
      sleeper: new Sleeper(),
      maxSleepMs: 10_000,
      claimAheadMs: 0,
      onError: () => {},
    });
    loop.start();
    await finished;
    await loop.stop();
    return pauses.slice(0, replies.length);
  }

  it('marks a pause that ends at a due time as an approach (for the spin), and the safety timer not', async () => {
    const pauses = await pausesOf([
      reply(1_300, []), // due in 300 ms
      reply(-1, []), // nothing scheduled: the safety timer
      reply(60_000, []), // due after maxSleepMs: the safety timer comes first
    ]);
    expect(pauses[0]![1]).toBe(true);
    expect(pauses[0]![0]).toBeGreaterThan(250);
    expect(pauses[1]).toEqual([10_000, false]);
    expect(pauses[2]).toEqual([10_000, false]);
  });
});
