import { performance } from 'node:perf_hooks';
import { describe, expect, it } from 'vitest';
import { Sleeper, wholeMsSince } from './clock.js';

/** CPU time (user + system, ms) this process spends while `run` runs, and when it ended. */
async function cpuDuring(run: () => Promise<void>): Promise<{ cpuMs: number; endedAt: number }> {
  const before = process.cpuUsage();
  await run();
  const endedAt = performance.now();
  const used = process.cpuUsage(before);
  return { cpuMs: (used.user + used.system) / 1000, endedAt };
}

describe('wholeMsSince', () => {
  it('counts whole ms on the monotonic clock, rounded down, never below 0', () => {
    const now = performance.now();
    expect(wholeMsSince(now - 5.9)).toBe(5);
    expect(wholeMsSince(now + 100)).toBe(0);
  });
});

describe('Sleeper spin', () => {
  it('an approach sleep ends at its end, never before it, spinning only its last spinMs', async () => {
    // spinMs as long as the sleep: the whole sleep is a spin, which shows as CPU time.
    const spinning = new Sleeper(200);
    const target = performance.now() + 200;
    const spun = await cpuDuring(() => spinning.sleep(200, true));
    expect(spun.endedAt).toBeGreaterThanOrEqual(target);
    expect(spun.cpuMs).toBeGreaterThan(100);

    // A 2 ms spin: the rest is one timer, so the same sleep costs next to no CPU.
    const sleeper = new Sleeper(2);
    const target2 = performance.now() + 200;
    const timed = await cpuDuring(() => sleeper.sleep(200, true));
    expect(timed.endedAt).toBeGreaterThanOrEqual(target2);
    expect(timed.cpuMs).toBeLessThan(50);
  });

  it('a sleep that does not end at a due time never spins', async () => {
    const sleeper = new Sleeper(200);
    const { cpuMs } = await cpuDuring(() => sleeper.sleep(200));
    expect(cpuMs).toBeLessThan(50);
  });

  it('wakeWithin ends a sleep at the due time it names, not before, through the spin', async () => {
    const sleeper = new Sleeper(2);
    const sleep = sleeper.sleep(10_000);
    const due = performance.now() + 30;
    sleeper.wakeWithin(30);
    const { endedAt } = await cpuDuring(() => sleep);
    expect(endedAt).toBeGreaterThanOrEqual(due);
    expect(endedAt - due).toBeLessThan(1_000);
  });

  it('wakeNow ends a spin at once', async () => {
    const sleeper = new Sleeper(5_000);
    const started = performance.now();
    const sleep = sleeper.sleep(5_000, true);
    setTimeout(() => sleeper.wakeNow(), 20);
    await sleep;
    expect(performance.now() - started).toBeLessThan(2_000);
  });

  it('a wake-up kept for the next sleep still ends it at its due time, not before', async () => {
    const sleeper = new Sleeper(2);
    const due = performance.now() + 30;
    sleeper.wakeWithin(30);
    await sleeper.sleep(10_000);
    expect(performance.now()).toBeGreaterThanOrEqual(due);
  });
});
