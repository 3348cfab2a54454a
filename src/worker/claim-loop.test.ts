import { describe, expect, it } from 'vitest';
import { ServerClock, Sleeper } from '../clock.js';
import type { ClaimedJob, ClaimOutput } from '../operations/claim.js';
import { ClaimLoop } from './claim-loop.js';

/** A loop over a stand-in source that answers each claim with `reply(limit)`. */
function loopWith(reply: (limit: number) => ClaimOutput, free = 3) {
  const limits: number[] = [];
  const started: string[] = [];
  const loop = new ClaimLoop({
    source: {
      claim: async (limit) => {
        limits.push(limit);
        return reply(limit);
      },
      pause: async () => {},
    },
    freeSlots: () => free,
    waitForSlot: () => new Promise(() => {}),
    start: (job) => started.push(job.id),
    clock: new ServerClock(),
    sleeper: new Sleeper(),
    maxSleepMs: 10_000,
    onError: () => {},
  });
  return { loop, limits, started };
}

const jobs = (n: number): ClaimedJob[] =>
  Array.from({ length: n }, (_, i) => ({ id: `j${i}` }) as ClaimedJob);

describe('ClaimLoop.runOnce', () => {
  it('claims with every free slot, starts what came, and goes on at once when all slots were filled', async () => {
    const { loop, limits, started } = loopWith(() => ({ now: 1_000, nextAt: 1_000, jobs: jobs(3) }));
    expect(await loop.runOnce()).toBe(0);
    expect(limits).toEqual([3]);
    expect(started).toEqual(['j0', 'j1', 'j2']);
  });

  it('sleeps the safety timer when the source has nothing scheduled', async () => {
    const { loop } = loopWith(() => ({ now: 1_000, nextAt: -1, jobs: [] }));
    expect(await loop.runOnce()).toBe(10_000);
  });

  it('sleeps until the next due time, by the server clock of the reply', async () => {
    const { loop } = loopWith(() => ({ now: 1_000, nextAt: 1_500, jobs: jobs(1) }));
    const sleep = await loop.runOnce();
    // 500 ms less what elapsed locally since the reply (well under 50 ms).
    expect(sleep).toBeLessThanOrEqual(500);
    expect(sleep).toBeGreaterThan(450);
  });

  it('never sleeps 0 ms when nothing came, so it cannot spin', async () => {
    const { loop } = loopWith(() => ({ now: 1_000, nextAt: 1_000, jobs: [] }));
    expect(await loop.runOnce()).toBe(1);
  });
});

describe('ClaimLoop pauses', () => {
  /** Run the loop over `replies` (one per claim, the last repeated) and record each pause. */
  async function pausesOf(replies: Array<Omit<ClaimOutput, 'now'>>): Promise<Array<[number, boolean]>> {
    const pauses: Array<[number, boolean]> = [];
    const clock = new ServerClock();
    let claims = 0;
    let done: () => void = () => {};
    const finished = new Promise<void>((resolve) => (done = resolve));
    const loop = new ClaimLoop({
      source: {
        claim: async () => ({ now: 1_000, ...replies[Math.min(claims++, replies.length - 1)]! }),
        pause: async (ms, approach) => {
          pauses.push([ms, approach ?? false]);
          if (pauses.length === replies.length) done();
        },
      },
      freeSlots: () => 2,
      waitForSlot: () => new Promise(() => {}),
      start: () => {},
      clock,
      sleeper: new Sleeper(),
      maxSleepMs: 10_000,
      onError: () => {},
    });
    loop.start();
    await finished;
    await loop.stop();
    return pauses.slice(0, replies.length);
  }

  it('marks a pause that ends at a due time as an approach (for the spin), and the safety timer not', async () => {
    const pauses = await pausesOf([
      { nextAt: 1_300, jobs: [] }, // due in 300 ms
      { nextAt: -1, jobs: [] }, // nothing scheduled: the safety timer
      { nextAt: 60_000, jobs: [] }, // due after maxSleepMs: the safety timer comes first
    ]);
    expect(pauses[0]![1]).toBe(true);
    expect(pauses[0]![0]).toBeGreaterThan(250);
    expect(pauses[1]).toEqual([10_000, false]);
    expect(pauses[2]).toEqual([10_000, false]);
  });
});
