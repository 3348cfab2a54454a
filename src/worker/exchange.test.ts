import { describe, expect, it } from 'vitest';
import type { AckItem, ClaimOutput } from '../operations/claim.js';
import { Exchange } from './exchange.js';

const item = (n: number): AckItem => ({
  member: `1.1|j${n}`,
  knownDeadline: 0,
  hadError: false,
  progressed: false,
});

/** An exchange over a stand-in call that records each call's limit and acks, answering `ok` to each. */
function exchangeWith(gate?: () => Promise<void>) {
  const calls: Array<[number, string[]]> = [];
  const exchange = new Exchange(async (limit, acks) => {
    calls.push([limit, acks.map((a) => a.member)]);
    await gate?.();
    const out: ClaimOutput = {
      now: 1,
      nextAt: -1,
      acks: acks.map(() => ({ status: 'ok' })),
      jobs: [],
      unreadable: [],
      paused: false,
    };
    return out;
  });
  return { exchange, calls };
}

describe('Exchange', () => {
  it('a claim carries the acks queued before it; nothing is sent twice', async () => {
    const { exchange, calls } = exchangeWith();
    const acked = [exchange.ack(item(1)), exchange.ack(item(2))];
    await exchange.claim(3);
    expect(await Promise.all(acked)).toEqual([{ status: 'ok' }, { status: 'ok' }]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(calls).toEqual([[3, ['1.1|j1', '1.1|j2']]]);
  });

  it('acks with no claim coming go on their own, after the current turn', async () => {
    const { exchange, calls } = exchangeWith();
    expect(await exchange.ack(item(1))).toEqual({ status: 'ok' });
    expect(calls).toEqual([[0, ['1.1|j1']]]);
  });

  it('one call in flight at a time: acks queued meanwhile ride on the next one', async () => {
    let open: () => void = () => {};
    let first = true;
    const { exchange, calls } = exchangeWith(() =>
      first ? ((first = false), new Promise<void>((resolve) => (open = resolve))) : Promise.resolve(),
    );
    const claimed = exchange.claim(2);
    await new Promise((resolve) => setImmediate(resolve));
    const acked = exchange.ack(item(7));
    const again = exchange.claim(1);
    await new Promise((resolve) => setImmediate(resolve));
    expect(calls).toEqual([[2, []]]);
    open();
    await Promise.all([claimed, again, acked]);
    expect(calls).toEqual([
      [2, []],
      [1, ['1.1|j7']],
    ]);
  });

  it('a failed call rejects the acks it carried, and the exchange goes on', async () => {
    let fail = true;
    const exchange = new Exchange(async (_limit, acks) => {
      if (fail) {
        fail = false;
        throw new Error('connection lost');
      }
      return {
        now: 1,
        nextAt: -1,
        acks: acks.map(() => ({ status: 'ok' as const })),
        jobs: [],
        unreadable: [],
        paused: false,
      };
    });
    await expect(exchange.ack(item(1))).rejects.toThrow('connection lost');
    expect(await exchange.ack(item(2))).toEqual({ status: 'ok' });
  });
});
