import { describe, expect, it } from 'vitest';
import { Sleeper } from '../clock.js';
import type { ClaimedJob, ClaimOutput } from '../operations/claim.js';
import type { ClaimSource } from './claim-source.js';
import { PartitionedSource } from './partitioned-source.js';

/** A partition whose claims the test answers: jobs it has, when its next one is due, or an error. */
class FakePartition implements ClaimSource {
  readonly limits: number[] = [];
  jobs = 0;
  nextAt = -1;
  paused = false;
  error: Error | undefined;
  started = 0;
  stopped = 0;

  constructor(
    private readonly name: string,
    private readonly now: () => number,
  ) {}

  async claim(limit: number): Promise<ClaimOutput> {
    this.limits.push(limit);
    if (this.error) throw this.error;
    const taken = Math.min(limit, this.jobs);
    this.jobs -= taken;
    const jobs = Array.from({ length: taken }, (_, i) => ({ id: `${this.name}${i}` }) as ClaimedJob);
    return {
      now: this.now(),
      nextAt: this.paused ? -1 : this.nextAt,
      acks: [],
      jobs,
      unreadable: [],
      paused: this.paused,
    };
  }

  async pause(): Promise<void> {}
  woken(): void {}
  async start(): Promise<void> {
    this.started++;
  }
  async stop(): Promise<void> {
    this.stopped++;
  }
}

function setup() {
  let now = 1_000;
  const clock = { now: () => now };
  const a = new FakePartition('a', clock.now);
  const b = new FakePartition('b', clock.now);
  const errors: Error[] = [];
  const source = new PartitionedSource([a, b], {
    clock,
    sleeper: new Sleeper(),
    maxSleepMs: 10_000,
    onError: (err) => errors.push(err),
  });
  return { a, b, errors, source, advance: (ms: number) => (now += ms) };
}

describe('PartitionedSource', () => {
  it('is paused when every partition it asked says so (pause writes them one by one)', async () => {
    const { a, b, source, advance } = setup();
    a.paused = true;
    expect((await source.claim(4)).paused).toBe(false);
    b.paused = true;
    advance(10_000);
    expect((await source.claim(4)).paused).toBe(true);
  });

  it('shares the free slots among the due partitions and merges what they give', async () => {
    const { a, b, source } = setup();
    a.jobs = 5;
    b.jobs = 1;
    b.nextAt = 3_000;
    const out = await source.claim(4);
    expect([a.limits, b.limits]).toEqual([[2], [2]]);
    expect(out.jobs.map((j) => j.id)).toEqual(['a0', 'a1', 'b0']);
    // a filled its share and may have more: it is due again at once.
    expect(out.nextAt).toBe(1_000);
    await source.claim(4);
    expect([a.limits, b.limits]).toEqual([[2, 4], [2]]);
  });

  it('sleeps until the earliest partition is due, and a wake-up brings one forward', async () => {
    const { a, b, source, advance } = setup();
    a.nextAt = 5_000;
    b.nextAt = 8_000;
    expect((await source.claim(4)).nextAt).toBe(5_000);
    source.woken(1, 2_000);
    expect((await source.claim(4)).nextAt).toBe(2_000);
    advance(1_000);
    await source.claim(4);
    expect([a.limits, b.limits]).toEqual([[2], [2, 4]]);
  });

  it('goes on with the others when one partition fails, reports it, and leaves it alone for a while', async () => {
    const { a, b, errors, source, advance } = setup();
    a.error = new Error('partition a down');
    b.jobs = 3;
    const out = await source.claim(4);
    expect(out.jobs.map((j) => j.id)).toEqual(['b0', 'b1']);
    expect(errors.map((e) => e.message)).toEqual(['partition a down']);
    await source.claim(4);
    expect(a.limits).toEqual([2]);
    a.error = undefined;
    a.jobs = 1;
    advance(1_000);
    // Only a is due now (b came back short and has nothing scheduled): it gets every slot.
    expect((await source.claim(4)).jobs.map((j) => j.id)).toEqual(['a0']);
    expect(a.limits).toEqual([2, 4]);
  });

  it('throws when every partition fails, so the loop reports it and pauses', async () => {
    const { a, b, errors, source } = setup();
    a.error = new Error('down');
    b.error = new Error('down too');
    await expect(source.claim(4)).rejects.toThrow('down');
    expect(errors).toEqual([]);
  });

  it('starts and stops every partition', async () => {
    const { a, b, source } = setup();
    await source.start();
    await source.stop();
    expect([a.started, a.stopped, b.started, b.stopped]).toEqual([1, 1, 1, 1]);
  });
});
