import { describe, expect, it } from 'vitest';
import type { AckJob, AckOutcome } from '../operations/ack.js';
import { AckBatcher } from './ack-batcher.js';

const job = (id: string): AckJob => ({ id, token: `t-${id}`, knownDeadline: 0 });

describe('AckBatcher', () => {
  it('sends the first ack at once and coalesces those that arrive while it is in flight', async () => {
    const calls: string[][] = [];
    let release: () => void = () => {};
    const batcher = new AckBatcher(async (jobs) => {
      calls.push(jobs.map((j) => j.id));
      if (calls.length === 1) await new Promise<void>((r) => (release = r));
      return jobs.map((j): AckOutcome =>
        j.id === 'c' ? { status: 'lost', detail: 'expired' } : { status: 'ok' },
      );
    });
    const first = batcher.ack(job('a'));
    const rest = [batcher.ack(job('b')), batcher.ack(job('c')), batcher.ack(job('d'))];
    expect(calls).toEqual([['a']]);
    release();
    expect(await first).toEqual({ status: 'ok' });
    expect(await Promise.all(rest)).toEqual([
      { status: 'ok' },
      { status: 'lost', detail: 'expired' },
      { status: 'ok' },
    ]);
    expect(calls).toEqual([['a'], ['b', 'c', 'd']]);
  });

  it('splits a backlog into batches of at most maxBatch', async () => {
    const sizes: number[] = [];
    const batcher = new AckBatcher(async (jobs) => {
      sizes.push(jobs.length);
      await Promise.resolve();
      return jobs.map((): AckOutcome => ({ status: 'ok' }));
    }, 2);
    await Promise.all(['a', 'b', 'c', 'd', 'e'].map((id) => batcher.ack(job(id))));
    expect(sizes).toEqual([1, 2, 2]);
  });

  it('rejects every ack of a failed call, and recovers for the next', async () => {
    let fail = true;
    const batcher = new AckBatcher(async (jobs) => {
      if (fail) throw new Error('connection lost');
      return jobs.map((): AckOutcome => ({ status: 'ok' }));
    });
    await expect(batcher.ack(job('a'))).rejects.toThrow('connection lost');
    fail = false;
    await expect(batcher.ack(job('b'))).resolves.toEqual({ status: 'ok' });
  });
});
