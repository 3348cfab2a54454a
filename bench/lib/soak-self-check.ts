/**
 * `npm run soak -- --self-check`: feeds checkSoak hand-made histories, each of which must give
 * exactly the counts written beside it, so a soak that says "lost 0" is known to be able to say
 * otherwise. No Redis, no processes; a second to run.
 */
import { checkSoak, type SoakEntry, type SoakPayload, type SoakReport } from './soak-ledger.js';

type Counted = Pick<
  SoakReport,
  'completed' | 'dead' | 'completedReplyLost' | 'lost' | 'ranTwiceWhileHolderLived' | 'unexpectedOutcome'
>;

interface Case {
  name: string;
  kind?: SoakPayload['k'];
  ledgers: Array<[number, SoakEntry[]]>;
  killed?: Array<[number, number]>;
  foundDead?: string[];
  unfinished?: string[];
  expect: Partial<Counted>;
}

const ran = (a: number, start: number, end: number, ok: boolean): SoakEntry[] => [
  { e: 's', id: 'j', a, t: start },
  { e: 'e', id: 'j', a, t: end, ok },
];
const completedAt = (t: number): SoakEntry => ({ e: 'c', id: 'j', t });

const CASES: Case[] = [
  {
    name: 'ran once and completed',
    ledgers: [[1, [...ran(1, 1, 2, true), completedAt(3)]]],
    expect: { completed: 1 },
  },
  { name: 'never ran', ledgers: [], expect: { lost: 1 } },
  { name: 'ran, never completed, holder alive', ledgers: [[1, ran(1, 1, 2, true)]], expect: { lost: 1 } },
  {
    name: 'still in Redis at the end',
    ledgers: [[1, ran(1, 1, 2, true)]],
    killed: [[1, 5]],
    unfinished: ['j'],
    expect: { lost: 1 },
  },
  {
    name: 'second run while the first holder lived',
    ledgers: [
      [1, [...ran(1, 1, 5, true), completedAt(6)]],
      [2, ran(2, 3, 4, true)],
    ],
    expect: { completed: 1, ranTwiceWhileHolderLived: 1 },
  },
  {
    name: 'run again after it completed',
    ledgers: [[1, [...ran(1, 1, 2, true), completedAt(3), ...ran(2, 10, 11, true)]]],
    expect: { completed: 1, ranTwiceWhileHolderLived: 1 },
  },
  {
    name: 'run again after its holder was killed',
    ledgers: [
      [1, [{ e: 's', id: 'j', a: 1, t: 1 }]],
      [2, [...ran(2, 30, 31, true), completedAt(32)]],
    ],
    killed: [[1, 10]],
    expect: { completed: 1 },
  },
  {
    name: 'ended ok, holder killed before its completion line',
    ledgers: [[1, ran(1, 1, 2, true)]],
    killed: [[1, 10]],
    expect: { completedReplyLost: 1 },
  },
  {
    name: 'retried after a deliberate failure',
    kind: 'once',
    ledgers: [[1, [...ran(1, 1, 2, false), ...ran(2, 300, 301, true), completedAt(302)]]],
    expect: { completed: 1 },
  },
  {
    name: 'always failing, found dead',
    kind: 'always',
    ledgers: [[1, [...ran(1, 1, 2, false), ...ran(2, 300, 301, false), ...ran(3, 600, 601, false)]]],
    foundDead: ['j'],
    expect: { dead: 1 },
  },
  {
    name: 'always failing, yet completed',
    kind: 'always',
    ledgers: [[1, [...ran(1, 1, 2, true), completedAt(3)]]],
    expect: { completed: 1, unexpectedOutcome: 1 },
  },
  {
    name: 'should complete, went dead',
    ledgers: [[1, [...ran(1, 1, 2, false), { e: 'd', id: 'j', t: 3 }]]],
    expect: { dead: 1, unexpectedOutcome: 1 },
  },
];

/** Run every case; returns the failures (empty when the checker says what each history holds). */
export function selfCheck(): string[] {
  const failures: string[] = [];
  for (const c of CASES) {
    const report = checkSoak({
      accepted: new Map([['j', c.kind ?? 'ok']]),
      ledgers: new Map(c.ledgers),
      killedAt: new Map(c.killed ?? []),
      foundDead: new Set(c.foundDead ?? []),
      unfinished: new Set(c.unfinished ?? []),
    });
    const zero: Counted = {
      completed: 0,
      dead: 0,
      completedReplyLost: 0,
      lost: 0,
      ranTwiceWhileHolderLived: 0,
      unexpectedOutcome: 0,
    };
    const want = { ...zero, ...c.expect };
    const got = Object.fromEntries(Object.keys(zero).map((k) => [k, report[k as keyof Counted]]));
    if (JSON.stringify(got) !== JSON.stringify(want)) {
      failures.push(`${c.name}: want ${JSON.stringify(want)}, got ${JSON.stringify(got)}`);
    }
  }
  return failures;
}

/** How many cases selfCheck runs. */
export const SELF_CHECK_CASES = CASES.length;
