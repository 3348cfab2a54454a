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

  it('sleeps until just before the next due time, by the server clock of the reply', async () => {
    const { loop } = loopWith(() => ({ now: 1_000, nextAt: 1_500, jobs: jobs(1) }));
    const sleep = await loop.runOnce();
    // 500 ms less the 1 ms lead, less what elapsed locally since the reply (well under 50 ms).
    expect(sleep).toBeLessThanOrEqual(499);
    expect(sleep).toBeGreaterThan(450);
  });

  it('never sleeps 0 ms when nothing came, so it cannot spin', async () => {
    const { loop } = loopWith(() => ({ now: 1_000, nextAt: 1_000, jobs: [] }));
    expect(await loop.runOnce()).toBe(1);
  });
});
