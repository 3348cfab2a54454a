import { performance } from 'node:perf_hooks';
import { describe, expect, it } from 'vitest';
import { serverNowAtLeast, StartGate } from './start-gate.js';

/** A server clock the test moves by hand (the gate's fallback, for jobs without a reply clock). */
function handClock(start: number) {
  const clock = { at: start, now: () => clock.at };
  return clock;
}

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
const turns = async (n: number): Promise<void> => {
  for (let i = 0; i < n; i++) await turn();
};
/** Long enough for the gate's timer (at most SPIN_MS short of a due time) and a few spin turns. */
const settle = async (): Promise<void> => {
  await new Promise((resolve) => setTimeout(resolve, 5));
  await turns(3);
};

describe('serverNowAtLeast', () => {
  it('is the reply’s TIME plus the local time since it arrived, a little slowed, never more', async () => {
    const reply = { serverUs: 5_000_000, arrivedAt: performance.now() };
    await new Promise((resolve) => setTimeout(resolve, 20));
    const before = performance.now() - reply.arrivedAt;
    const bound = serverNowAtLeast(reply);
    const after = performance.now() - reply.arrivedAt;
    expect(bound).toBeLessThanOrEqual(5_000 + after);
    expect(bound).toBeGreaterThan(5_000 + before * 0.99);
  });
});

describe('StartGate', () => {
  it('lets a job that is due go at once', async () => {
    const gate = new StartGate(handClock(1_000));
    await gate.until(999, undefined);
    await gate.until(1_000, undefined);
    expect(gate.size).toBe(0);
  });

  it('holds jobs until the clock reaches their due times, then lets them go in due order', async () => {
    const clock = handClock(1_000);
    const gate = new StartGate(clock);
    const went: number[] = [];
    void gate.until(1_002, undefined).then(() => went.push(1_002));
    void gate.until(1_001, undefined).then(() => went.push(1_001));
    expect(gate.size).toBe(2);
    await settle();
    expect(went).toEqual([]);
    clock.at = 1_001.5;
    await settle();
    expect(went).toEqual([1_001]);
    clock.at = 1_002;
    await settle();
    expect(went).toEqual([1_001, 1_002]);
    expect(gate.size).toBe(0);
  });

  it('goes by the reply that leased the job, not by the fallback clock', async () => {
    // The fallback says long past; the reply says the job is due 3 ms after it arrived.
    const gate = new StartGate(handClock(1e15));
    const reply = { serverUs: 7_000_000, arrivedAt: performance.now() };
    let wentAt = 0;
    await gate.until(7_003, reply).then(() => (wentAt = performance.now()));
    expect(wentAt - reply.arrivedAt).toBeGreaterThanOrEqual(3);
  });

  it('waits on a timer, not on every event-loop turn, while the due time is far', async () => {
    const clock = handClock(1_000);
    const gate = new StartGate(clock);
    let went = false;
    void gate.until(1_030, undefined).then(() => (went = true));
    // A timer of ~28 ms is set: moving the clock without that timer firing lets nothing go.
    clock.at = 1_030;
    await turns(5);
    expect(went).toBe(false);
    await new Promise((resolve) => setTimeout(resolve, 40));
    await turns(5);
    expect(went).toBe(true);
  });

  it('startAt: the bound of the server clock when the job goes, not its due time, and never before it', async () => {
    const clock = handClock(1_000);
    const gate = new StartGate(clock);
    let started: number | undefined;
    void gate.startAt(1_002, undefined).then((at) => (started = at));
    await settle();
    expect(started).toBeUndefined();
    // The clock jumps past the due time: the start is where the clock is, in whole ms, not 1_002.
    clock.at = 1_003.7;
    await settle();
    expect(started).toBe(1_003);
  });

  it('startAt by a reply: at or after the due time, at most the bound read after it', async () => {
    const gate = new StartGate(handClock(0));
    const reply = { serverUs: 9_000_000, arrivedAt: performance.now() };
    const started = await gate.startAt(9_002, reply);
    expect(started).toBeGreaterThanOrEqual(9_002);
    expect(started).toBeLessThanOrEqual(Math.floor(serverNowAtLeast(reply)));
  });
});
