import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { BatchCollector } from './batch-collector.js';

/** A collector on a fake server clock (`clock.now`), recording the batches it sends. */
function setup(size: number, waitMs: number) {
  const clock = { now: 1_000 };
  const sent: string[][] = [];
  const collector = new BatchCollector<string>({
    size,
    waitMs,
    now: () => clock.now,
    dispatch: (items) => sent.push(items),
  });
  // The fake timers and the fake server clock move together.
  const advance = (ms: number) => {
    clock.now += ms;
    vi.advanceTimersByTime(ms);
  };
  return { clock, sent, collector, advance };
}

describe('BatchCollector', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('sends a full batch at once, without waiting for waitMs', () => {
    const { sent, collector } = setup(3, 60_000);
    collector.add('a', 1_000);
    collector.add('b', 1_000);
    expect(sent).toEqual([]);
    expect(collector.room()).toBe(1);
    collector.add('c', 1_000);
    expect(sent).toEqual([['a', 'b', 'c']]);
    expect(collector.room()).toBe(3);
  });

  it('holds a lone due job until its due time + waitMs by the server clock, and no longer', () => {
    const { sent, collector, advance } = setup(10, 50);
    // Claimed 20 ms after it was due: 30 ms of the 50 are left.
    collector.add('a', 980);
    advance(29);
    expect(sent).toEqual([]);
    advance(1);
    expect(sent).toEqual([['a']]);
  });

  it('a job already due for longer than waitMs goes on the next turn, with the rest of its claim reply', () => {
    const { sent, collector, advance } = setup(10, 50);
    collector.add('late', 900);
    collector.add('next', 990);
    expect(sent).toEqual([]);
    advance(0);
    expect(sent).toEqual([['late', 'next']]);
  });

  it('jobs that join keep the earliest due time as the deadline; an earlier-due one moves it earlier', () => {
    const { sent, collector, advance } = setup(10, 100);
    collector.add('a', 1_000); // deadline 1100
    advance(40);
    collector.add('b', 1_040); // later due: deadline stays 1100
    collector.add('early', 960); // earlier due (a priority job, say): deadline 1060
    advance(19);
    expect(sent).toEqual([]);
    advance(1);
    expect(sent).toEqual([['a', 'b', 'early']]);
    advance(200);
    expect(sent).toHaveLength(1);
  });

  it('take() empties the forming batch and cancels its timer (shutdown hands the jobs back)', () => {
    const { sent, collector, advance } = setup(10, 10);
    collector.add('a', 1_000);
    expect(collector.take()).toEqual(['a']);
    advance(100);
    expect(sent).toEqual([]);
    expect(collector.room()).toBe(10);
  });
});
