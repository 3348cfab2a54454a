import { describe, expect, it } from 'vitest';
import { PartitionPicker } from './partition-picker.js';

describe('PartitionPicker', () => {
  it('looks at every partition first, sharing the slots evenly', () => {
    const picker = new PartitionPicker(4, 10_000);
    expect(picker.plan(10, 0)).toEqual([
      { partition: 0, limit: 3 },
      { partition: 1, limit: 3 },
      { partition: 2, limit: 2 },
      { partition: 3, limit: 2 },
    ]);
    // The leftover slots go round-robin: this time from partition 2 on.
    expect(picker.plan(10, 0)).toEqual([
      { partition: 2, limit: 3 },
      { partition: 3, limit: 3 },
      { partition: 0, limit: 2 },
      { partition: 1, limit: 2 },
    ]);
    expect(picker.plan(10, 0)[0]).toEqual({ partition: 0, limit: 3 });
  });

  it('with fewer slots than due partitions, serves each in turn', () => {
    const picker = new PartitionPicker(3, 10_000);
    const served = Array.from({ length: 6 }, () => picker.plan(1, 0).map((s) => s.partition));
    expect(served).toEqual([[0], [1], [2], [0], [1], [2]]);
  });

  it('a partition always full does not keep a due one waiting', () => {
    const picker = new PartitionPicker(2, 10_000);
    picker.claimed(0, 1, 1, 0, 0); // full: more may be due
    picker.claimed(1, 1, 0, 0, 500); // next job at 500
    expect(picker.plan(1, 100)).toEqual([{ partition: 0, limit: 1 }]);
    picker.claimed(0, 1, 1, 100, 100);
    const at500 = [picker.plan(1, 500), picker.plan(1, 500)].flat().map((s) => s.partition);
    expect(at500).toContain(1);
  });

  it('sleeps until the earliest partition, brought forward by wake-ups, at most maxSleepMs', () => {
    const picker = new PartitionPicker(3, 10_000);
    picker.claimed(0, 5, 0, 1_000, 4_000);
    picker.claimed(1, 5, 0, 1_000, -1); // nothing waiting: look again after maxSleepMs
    picker.claimed(2, 5, 0, 1_000, 3_000);
    expect(picker.nextAt(1_000)).toBe(3_000);
    expect(picker.plan(5, 2_000)).toEqual([]);
    picker.woken(1, 1_500);
    expect(picker.nextAt(1_000)).toBe(1_500);
    expect(picker.plan(5, 1_500)).toEqual([{ partition: 1, limit: 5 }]);
    picker.claimed(1, 5, 0, 1_500, -1);
    expect(picker.nextAt(1_500)).toBe(3_000);
    picker.claimed(2, 5, 0, 3_000, -1);
    picker.claimed(0, 5, 0, 4_000, -1);
    expect(picker.nextAt(4_000)).toBe(11_500);
    picker.wokenAll();
    expect(picker.plan(3, 4_000).map((s) => s.partition)).toEqual([0, 1, 2]);
  });

  it('leaves a failed partition alone for the pause', () => {
    const picker = new PartitionPicker(2, 10_000);
    picker.failed(0, 0, 1_000);
    picker.claimed(1, 4, 0, 0, -1);
    expect(picker.plan(4, 999)).toEqual([]);
    expect(picker.plan(4, 1_000)).toEqual([{ partition: 0, limit: 4 }]);
  });

  it('keeps a wake-up that arrived while that partition’s claim was in flight', () => {
    const picker = new PartitionPicker(2, 3_600_000);
    expect(picker.plan(2, 0).map((s) => s.partition)).toEqual([0, 1]);
    // A job due at 200 is added to partition 1 after its claim ran in Redis, before the answer is back.
    picker.woken(1, 200);
    picker.claimed(0, 1, 0, 10, -1);
    picker.claimed(1, 1, 0, 10, -1); // its claim saw an empty partition
    expect(picker.nextAt(10)).toBe(200);
    expect(picker.plan(2, 200)).toEqual([{ partition: 1, limit: 2 }]);
    // Once that claim is answered, the wake-up is spent: the next answer counts alone (partition 0's
    // bound, from its claim at 10, is now the earliest).
    picker.claimed(1, 2, 1, 200, -1);
    expect(picker.nextAt(200)).toBe(10 + 3_600_000);
  });
});
