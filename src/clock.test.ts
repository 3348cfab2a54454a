import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ServerClock, Sleeper, wholeMsSince } from './clock.js';

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
    // Time passes between the readings (a loaded machine can make it a few ms): bound, not equal.
    const since = performance.now() - 5.9;
    const got = wholeMsSince(since);
    const elapsed = performance.now() - since;
    expect(Number.isInteger(got)).toBe(true);
    expect(got).toBeGreaterThanOrEqual(5);
    expect(got).toBeLessThanOrEqual(elapsed); // rounded down: never more than the time elapsed
    expect(wholeMsSince(performance.now() + 100)).toBe(0);
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
    vi.spyOn(globalThis, 'setImmediate').mockImplementation((...args: Parameters<typeof setImmediate>) => {
      seen.immediatesAt.push(performance.now());
      return setImmediateReal(...args);
    });
    vi.spyOn(globalThis, 'setTimeout').mockImplementation((...args: Parameters<typeof setTimeout>) => {
      seen.timerDelays.push(Number(args[1] ?? 0));
      return setTimeoutReal(...args);
    });
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

describe('ServerClock', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  /** performance.now() reads `local.t`; the test moves it. */
  function localClock(): { t: number } {
    const local = { t: 100 };
    vi.spyOn(performance, 'now').mockImplementation(() => local.t);
    return local;
  }

  const EPOCH = 1_700_000_000_000;

  it('keeps the highest reading: a reply that waited does not set it back', () => {
    const local = localClock();
    const clock = new ServerClock();
    expect(clock.observed).toBe(false);
    clock.observe(EPOCH + 100); // came at once
    expect(clock.observed).toBe(true);
    local.t = 200;
    // Read at server 190 but handled at local 200 (10 ms in the socket during a GC): looser.
    clock.observe(EPOCH + 190);
    expect(clock.now()).toBeCloseTo(EPOCH + 200, 2);
    local.t = 300;
    // A reading that raises the bound (this one waited less than the first) is taken.
    clock.observe(EPOCH + 300.5);
    expect(clock.now()).toBeCloseTo(EPOCH + 300.5, 6);
  });

  it('lets a held reading down by 10 ppm of its age', () => {
    const local = localClock();
    const clock = new ServerClock();
    clock.observe(EPOCH + 100);
    local.t = 100_100; // 100 s later
    expect(clock.now()).toBeCloseTo(EPOCH + 100_100 - 1, 6);
  });

  it('drops a held reading the server clock is seen below (a step back, another node)', () => {
    const local = localClock();
    const clock = new ServerClock();
    clock.observe(EPOCH + 100);
    local.t = 200;
    // Sent at 199, the script read TIME 2 s behind the held estimate: the clock stepped back.
    clock.observe(EPOCH - 1_800, 199);
    expect(clock.now()).toBeCloseTo(EPOCH - 1_800, 6);
    // Without the send time a lower reading only says "at least": the held one stays.
    local.t = 300;
    clock.observe(EPOCH - 5_000);
    expect(clock.now()).toBeCloseTo(EPOCH - 1_700, 2);
  });
});

describe('Sleeper.dueEndWithin', () => {
  it('tells how soon a sleep that ends at a due time ends; nothing for other sleeps or none', async () => {
    const sleeper = new Sleeper(0);
    expect(sleeper.dueEndWithin()).toBeUndefined();
    const idle = sleeper.sleep(30);
    expect(sleeper.dueEndWithin()).toBeUndefined(); // the safety timer: no claim is due then
    sleeper.interrupt();
    await idle;
    const approach = sleeper.sleep(30, true);
    const within = sleeper.dueEndWithin();
    expect(within).toBeGreaterThan(0);
    expect(within).toBeLessThanOrEqual(30);
    // A wake-up to a due time makes an idle sleep one that ends at a due time.
    await approach;
    expect(sleeper.dueEndWithin()).toBeUndefined();
    const woken = sleeper.sleep(10_000);
    sleeper.wakeWithin(20);
    expect(sleeper.dueEndWithin()).toBeLessThanOrEqual(20);
    await woken;
  });
});
