import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, it, vi } from 'vitest';
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
  afterEach(() => {
    vi.restoreAllMocks();
  });

  /**
   * Watch the sleeper's event-loop turns: when each setImmediate was scheduled, and the delays of
   * the timers set (the spies call through, so the sleep runs as it would).
   */
  function watchTurns(): { immediatesAt: number[]; timerDelays: number[] } {
    const seen = { immediatesAt: [] as number[], timerDelays: [] as number[] };
    const setImmediateReal = globalThis.setImmediate;
    const setTimeoutReal = globalThis.setTimeout;
    vi.spyOn(globalThis, 'setImmediate').mockImplementation(((...args: Parameters<typeof setImmediate>) => {
      seen.immediatesAt.push(performance.now());
      return setImmediateReal(...args);
    }));
    vi.spyOn(globalThis, 'setTimeout').mockImplementation(((...args: Parameters<typeof setTimeout>) => {
      seen.timerDelays.push(Number(args[1] ?? 0));
      return setTimeoutReal(...args);
    }));
    return seen;
  }

  // CPU time would show the spin too, but a loaded machine gives the process less of it: the tests
  // count the turns instead.
  it('an approach sleep ends at its end, never before it, spinning only its last spinMs', async () => {
    // spinMs as long as the sleep: the whole sleep is a spin, one turn after another, no timer.
    const spinning = new Sleeper(200);
    const spinTurns = watchTurns();
    const target = performance.now() + 200;
    const spun = spinning.sleep(200, true);
    expect(spinTurns.immediatesAt.length).toBe(1); // the spin starts at once
    await spun;
    expect(performance.now()).toBeGreaterThanOrEqual(target);
    expect(spinTurns.immediatesAt.length).toBeGreaterThan(1);
    expect(spinTurns.timerDelays.filter((ms) => ms >= 100)).toEqual([]);
    vi.restoreAllMocks();

    // A 2 ms spin: the rest is one timer, and the spin's turns all come within its last 2 ms.
    const sleeper = new Sleeper(2);
    const turns = watchTurns();
    const target2 = performance.now() + 200;
    await sleeper.sleep(200, true);
    expect(performance.now()).toBeGreaterThanOrEqual(target2);
    expect(turns.timerDelays.filter((ms) => ms >= 100)).toHaveLength(1);
    for (const at of turns.immediatesAt) expect(at).toBeGreaterThanOrEqual(target2 - 2);
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
