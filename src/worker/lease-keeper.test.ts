import { describe, expect, it } from 'vitest';
import { ServerClock } from '../clock.js';
import type { ExtendOutput } from '../operations/extend.js';
import { LeaseKeeper, type HeldLease } from './lease-keeper.js';

const lease = (id: string, deadline: number): HeldLease => ({
  id,
  token: '1.1',
  member: `1.1|${id}`,
  deadline,
  lost: false,
  keeperSlot: -1,
});

/** A keeper whose extend answers with `answer(members)` and records the members it was asked for. */
function keeper(answer: (members: string[]) => Array<number | null>) {
  const clock = new ServerClock();
  clock.observe(1_000_000);
  const asked: string[][] = [];
  const lost: string[] = [];
  const k = new LeaseKeeper({
    leaseMs: 30_000,
    clock,
    extend: async (_ms, held): Promise<ExtendOutput> => {
      const members = held.map((l) => l.member);
      asked.push(members);
      return { now: clock.now(), deadlines: answer(members) };
    },
    onLost: (l) => lost.push(l.id),
    onError: (err) => {
      throw err;
    },
  });
  return { k, asked, lost };
}

describe('LeaseKeeper', () => {
  it('renews exactly the leases it holds, after any order of tracks and untracks', async () => {
    const { k, asked } = keeper((members) => members.map(() => 2_000_000));
    const leases = ['a', 'b', 'c', 'd', 'e'].map((id) => lease(id, 0));
    for (const l of leases) k.track(l);
    k.untrack(leases[1]!); // from the middle: the last takes its slot
    k.untrack(leases[1]!); // twice: nothing more
    k.track(leases[4]!); // already held: not twice
    k.untrack(leases[0]!);
    k.track(leases[1]!);
    await k.runOnce();
    expect(asked.map((m) => [...m].sort())).toEqual([['1.1|b', '1.1|c', '1.1|d', '1.1|e']]);
    expect(leases.map((l) => l.deadline)).toEqual([0, 2_000_000, 2_000_000, 2_000_000, 2_000_000]);
    for (const l of leases) k.untrack(l);
    asked.length = 0;
    await k.runOnce();
    expect(asked).toEqual([]);
  });

  it('reports a lease found lost only while it still holds it', async () => {
    const { k, lost } = keeper((members) => members.map(() => null));
    const [a, b] = [lease('a', 0), lease('b', 0)];
    k.track(a);
    k.track(b);
    // b is settled (untracked) while the extend is out: its refusal is no loss.
    const run = k.runOnce();
    k.untrack(b);
    await run;
    expect(lost).toEqual(['a']);
    expect([a.lost, b.lost]).toEqual([true, false]);
  });
});
