import { describe, expect, it } from 'vitest';
import type { AckItem, AckOutcome, ClaimOutput } from '../operations/claim.js';
import { ACK_RIDE_MS, Exchange, type ExchangeOptions } from './exchange.js';

const item = (n: number): AckItem => ({
  member: `1.1|j${n}`,
  knownDeadline: 0,
  hadError: false,
  progressed: false,
});

/** The stand-in call's answer: `ok` to each ack, no job. */
function okReply(acks: readonly AckItem[]): ClaimOutput {
  return {
    now: 1,
    nextAt: -1,
    acks: acks.map(() => ({ status: 'ok' })),
    jobs: [],
    unreadable: [],
    paused: false,
  };
}

/** An exchange over a stand-in call that records each call's limit and acks, answering `ok` to each. */
function exchangeWith(options: ExchangeOptions = {}, gate?: () => Promise<void>) {
  const calls: Array<[number, string[]]> = [];
  const exchange = new Exchange(async (limit, acks) => {
    calls.push([limit, acks.map((a) => a.member)]);
    await gate?.();
    return okReply(acks);
  }, options);
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

  it('ackTo: each listener hears its own outcome from the call that carried it, in order', async () => {
    const heard: string[] = [];
    const exchange = new Exchange(async (_limit, acks) => ({
      ...okReply(acks),
      acks: acks.map((a) =>
        a.member.endsWith('j2') ? { status: 'lost', detail: 'expired' } : { status: 'ok' },
      ),
    }));
    const listener = (n: number) => ({
      ackSettled: (outcome: AckOutcome) => heard.push(`${n} ${outcome.status}`),
      ackFailed: (err: unknown) => heard.push(`${n} failed ${String(err)}`),
    });
    exchange.ackTo(item(1), listener(1));
    const promised = exchange.ack(item(3));
    exchange.ackTo(item(2), listener(2));
    await exchange.claim(1);
    expect(heard).toEqual(['1 ok', '2 lost']);
    expect(await promised).toEqual({ status: 'ok' });
  });

  it('ackTo: a failed call tells each listener; with no promise waiting, nothing is left unhandled', async () => {
    const heard: string[] = [];
    const exchange = new Exchange(async () => {
      throw new Error('connection is closed');
    });
    exchange.ackTo(item(1), {
      ackSettled: () => heard.push('settled'),
      ackFailed: (err: unknown) => heard.push(`failed: ${(err as Error).message}`),
    });
    // The ack-only flush after this turn carries it; its failure reaches the listener alone.
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(heard).toEqual(['failed: connection is closed']);
  });

  it('acks with no claim coming go on their own, after the current turn', async () => {
    const { exchange, calls } = exchangeWith();
    expect(await exchange.ack(item(1))).toEqual({ status: 'ok' });
    expect(calls).toEqual([[0, ['1.1|j1']]]);
  });

  it('acks wait for a claim due within ACK_RIDE_MS and ride it, not on a call of their own', async () => {
    const { exchange, calls } = exchangeWith({ nextClaimWithin: () => ACK_RIDE_MS - 1 });
    const acked = exchange.ack(item(1));
    // A turn of the event loop later an ack-only call would have gone: none has.
    await new Promise((resolve) => setImmediate(resolve));
    expect(calls).toEqual([]);
    await exchange.claim(4);
    expect(await acked).toEqual({ status: 'ok' });
    await new Promise((resolve) => setTimeout(resolve, ACK_RIDE_MS + 5));
    expect(calls).toEqual([[4, ['1.1|j1']]]);
  });

  it('acks waiting for a claim that does not come go on their own just after it was due', async () => {
    const { exchange, calls } = exchangeWith({ nextClaimWithin: () => 1 });
    const started = performance.now();
    expect(await exchange.ack(item(1))).toEqual({ status: 'ok' });
    expect(performance.now() - started).toBeGreaterThanOrEqual(1);
    expect(calls).toEqual([[0, ['1.1|j1']]]);
  });

  it('acks do not wait for a claim due later than ACK_RIDE_MS', async () => {
    const { exchange, calls } = exchangeWith({ nextClaimWithin: () => ACK_RIDE_MS + 50 });
    const acked = exchange.ack(item(1));
    await new Promise((resolve) => setImmediate(resolve));
    expect(calls).toEqual([[0, ['1.1|j1']]]);
    await acked;
  });

  it('an ack that frees something to claim wakes the sleeping loop and rides its claim', async () => {
    let woken = 0;
    const { exchange, calls } = exchangeWith({
      freesClaim: (a) => a.member.includes('\0'),
      // The loop, woken, claims at once (here: in the same turn).
      wakeClaim: () => {
        woken++;
        void exchange.claim(5);
        return true;
      },
    });
    expect(await exchange.ack({ ...item(1), member: '1.1|j1\0g' })).toEqual({ status: 'ok' });
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(woken).toBe(1);
    expect(calls).toEqual([[5, ['1.1|j1\0g']]]);
    // An ack that frees nothing goes on its own, as before: no wake.
    expect(await exchange.ack(item(2))).toEqual({ status: 'ok' });
    expect(woken).toBe(1);
    expect(calls[1]).toEqual([0, ['1.1|j2']]);
  });

  it('a freeing ack goes on its own when the loop was not asleep, or woke and claimed elsewhere', async () => {
    for (const asleep of [false, true]) {
      // Woken (asleep) but its claim goes to another partition: nothing comes here.
      const { calls, exchange } = exchangeWith({ freesClaim: () => true, wakeClaim: () => asleep });
      expect(await exchange.ack(item(3))).toEqual({ status: 'ok' });
      expect(calls).toEqual([[0, ['1.1|j3']]]);
    }
  });

  it('one call in flight at a time: acks queued meanwhile ride on the next one', async () => {
    let open: () => void = () => {};
    let first = true;
    const { exchange, calls } = exchangeWith({}, () =>
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

  it('acks queued behind a claim ride the claim sent when it answers; with none, they go a turn later', async () => {
    let open: () => void = () => {};
    const gate = () => new Promise<void>((resolve) => (open = resolve));
    const { exchange, calls } = exchangeWith({}, gate);
    // The claim loop's way: the next claim is sent as soon as the previous one answers, a few
    // promise steps later (the source, the loop, the dispatcher).
    const claimed = exchange.claim(2).then(async () => {
      for (let step = 0; step < 10; step++) await Promise.resolve();
      return exchange.claim(3);
    });
    const acked = exchange.ack(item(1));
    await new Promise((resolve) => setImmediate(resolve));
    expect(calls).toEqual([[2, []]]);
    open();
    await new Promise((resolve) => setImmediate(resolve));
    open();
    expect(await acked).toEqual({ status: 'ok' });
    await claimed;
    expect(calls).toEqual([
      [2, []],
      [3, ['1.1|j1']],
    ]);
    // No claim follows this one: the ack goes on its own once it has answered.
    const last = exchange.claim(1);
    const alone = exchange.ack(item(2));
    await new Promise((resolve) => setImmediate(resolve));
    open();
    await last;
    for (let turn = 0; turn < 3 && calls.length < 4; turn++) {
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(calls).toEqual([
      [2, []],
      [3, ['1.1|j1']],
      [1, []],
      [0, ['1.1|j2']],
    ]);
    open();
    expect(await alone).toEqual({ status: 'ok' });
  });

  it('a claim does not wait for an ack-only call in flight: it is written at once, behind it', async () => {
    const gates: Array<() => void> = [];
    const { exchange, calls } = exchangeWith({}, () => new Promise<void>((resolve) => gates.push(resolve)));
    const first = exchange.ack(item(1));
    // The ack-only flush goes after this turn, and stays open.
    await new Promise((resolve) => setImmediate(resolve));
    expect(calls).toEqual([[0, ['1.1|j1']]]);
    const second = exchange.ack(item(2));
    const claimed = exchange.claim(4);
    await new Promise((resolve) => setImmediate(resolve));
    // The claim went before the flush answered, carrying the ack queued since.
    expect(calls).toEqual([
      [0, ['1.1|j1']],
      [4, ['1.1|j2']],
    ]);
    // A second claim waits for the first to answer; an ack queued meanwhile rides it.
    const third = exchange.ack(item(3));
    const again = exchange.claim(1);
    await new Promise((resolve) => setImmediate(resolve));
    expect(calls).toHaveLength(2);
    gates.shift()!();
    gates.shift()!();
    expect(await Promise.all([first, second, claimed.then(() => 'claimed')])).toEqual([
      { status: 'ok' },
      { status: 'ok' },
      'claimed',
    ]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(calls[2]).toEqual([1, ['1.1|j3']]);
    gates.shift()!();
    await Promise.all([third, again]);
    expect(calls).toHaveLength(3);
  });

  it('a failed call rejects the acks it carried, and the exchange goes on', async () => {
    let fail = true;
    const exchange = new Exchange(async (_limit, acks) => {
      if (fail) {
        fail = false;
        throw new Error('connection lost');
      }
      return okReply(acks);
    });
    await expect(exchange.ack(item(1))).rejects.toThrow('connection lost');
    expect(await exchange.ack(item(2))).toEqual({ status: 'ok' });
  });
});
