/**
 * The chaos suite, bounded for CI (`npm test`); `npm run test:chaos` runs the long form.
 *
 * 1. The checker itself, on hand-made histories: each rule it enforces must fail when broken.
 * 2. A chaos run: worker processes behind fault proxies, jobs added while faults are injected at
 *    random moments (SIGKILL, SIGSTOP/SIGCONT, SIGTERM, CLIENT KILL, proxy stall and reset, Redis
 *    killed and restarted with appendonly yes + appendfsync always); the checker must find nothing.
 * 3. The control: the same with persistence off and a Redis restart; the checker must catch the
 *    jobs lost with it.
 */
import { describe, expect, test } from 'vitest';
import {
  checkChaos,
  formatCounts,
  type CheckInput,
  type FaultKind,
  type FaultRecord,
  type JobKind,
} from './checker.js';
import type { CallOutcome, ChaosEntry } from './ledger.js';
import { CLAIM_AHEAD_MS } from '../../src/worker/start-gate.js';
import { runChaos, type ChaosOptions } from './run.js';

// --- 1. The checker on hand-made histories -----------------------------------------------------

/** A job's history: claimed by `pid` with `token` at time `t` (both clocks), run, then settled (default: acked). */
function history(
  id: string,
  pid: number,
  token: string,
  t: number,
  settle: { phase?: 'ack' | 'fail'; outcome?: CallOutcome; resent?: boolean } | null = {},
): ChaosEntry[] {
  const entries: ChaosEntry[] = [
    { phase: 'claim', pid, at: t, now: t, leaseMs: 1_000, jobs: [{ id, token, attempt: 1, runAt: t - 10 }] },
    { phase: 'start', pid, id, token, attempt: 1, start: t, startNow: t },
    { phase: 'end', pid, id, token, attempt: 1, start: t, end: t + 100 },
  ];
  if (settle !== null) {
    entries.push({ phase: 'ack', pid, id, token, outcome: 'ok', at: t + 101, resent: false, ...settle });
  }
  return entries;
}

/** The same history as a later attempt of the job (not a fresh job under the same id). */
function attempt(n: number, entries: ChaosEntry[]): ChaosEntry[] {
  return entries.map((e) => {
    if (e.phase === 'claim') return { ...e, jobs: e.jobs.map((j) => ({ ...j, attempt: n })) };
    if (e.phase === 'start' || e.phase === 'end') return { ...e, attempt: n };
    return e;
  });
}

function check(overrides: Partial<CheckInput> & { entries: ChaosEntry[] }): ReturnType<typeof checkChaos> {
  return checkChaos({
    accepted: new Map<string, JobKind>([['a', 'normal']]),
    faults: [],
    exits: new Map(),
    dead: new Map(),
    unfinished: [],
    lingerMs: 0,
    ...overrides,
  });
}

const fault = (kind: FaultKind, pid: number, at: number, until = at): FaultRecord => ({
  kind,
  at,
  until,
  pids: [pid],
});

describe('the chaos checker', () => {
  test('a clean history passes', () => {
    const report = check({ entries: history('a', 1, '1', 10_000) });
    expect(report.violations).toEqual([]);
    expect(report.counts).toMatchObject({ accepted: 1, completed: 1, lost: 0, runs: 1, duplicates: 0 });
  });

  test('catches a lost job', () => {
    const report = check({
      accepted: new Map<string, JobKind>([
        ['a', 'normal'],
        ['b', 'normal'],
      ]),
      entries: history('a', 1, '1', 10_000),
    });
    expect(report.ok).toBe(false);
    expect(report.counts.lost).toBe(1);
    expect(report.violations.join('\n')).toMatch(/lost.*\bb\b/);
  });

  test('catches an unfinished job, a dead job without reason, and a job dead that should have completed', () => {
    const report = check({
      accepted: new Map<string, JobKind>([
        ['a', 'normal'],
        ['b', 'failAlways'],
        ['c', 'normal'],
      ]),
      entries: [],
      dead: new Map([
        ['a', 'lease expired'],
        ['b', ''],
      ]),
      unfinished: ['c'],
    });
    expect(report.counts).toMatchObject({ dead: 2, unexpectedDead: 1, unfinished: 1, lost: 0 });
    expect(report.violations).toHaveLength(3);
  });

  test('catches a stale ack that was applied (two leases completed one job)', () => {
    const report = check({
      entries: [...history('a', 1, '1', 10_000), ...attempt(2, history('a', 2, '2', 11_500))],
      faults: [fault('stop', 1, 10_050, 12_000)],
    });
    expect(report.counts.staleAcksApplied).toBe(1);
    expect(report.violations.join('\n')).toMatch(/completed by two different leases/);
  });

  test('tells a job run again after it completed (its add applied twice) from a stale ack applied', () => {
    // The same id, completed at 10_101, then started afresh (attempt 1) at 12_000 and completed again.
    const report = check({ entries: [...history('a', 1, '1', 10_000), ...history('a', 2, '2', 12_000)] });
    expect(report.counts).toMatchObject({
      recreatedAfterCompletion: 1,
      staleAcksApplied: 0,
      leaseOverlaps: 0,
    });
    expect(report.violations.join('\n')).toMatch(/run again after they had completed/);
  });

  test('counts refused stale acks without complaint', () => {
    const report = check({
      entries: [
        ...history('a', 1, '1', 10_000, { outcome: 'refused: expired' }),
        ...history('a', 2, '2', 11_500),
      ],
      faults: [fault('stop', 1, 10_050, 12_000)],
    });
    expect(report.violations).toEqual([]);
    expect(report.counts).toMatchObject({ staleAcksRefused: 1, duplicates: 1, duplicatesUnexplained: 0 });
  });

  test('catches two valid leases at once (a claim before the previous holder’s deadline)', () => {
    const report = check({
      entries: [
        ...history('a', 1, '1', 10_000, { outcome: 'refused: not held' }),
        ...history('a', 2, '2', 10_900),
      ],
      faults: [fault('kill', 1, 10_001)],
    });
    expect(report.counts.leaseOverlaps).toBe(1);
    // A holder that failed the job handed it back early: no overlap then.
    const handedBack = check({
      entries: [
        ...history('a', 1, '1', 10_000, { phase: 'fail', outcome: 'retry' }),
        ...history('a', 2, '2', 10_200),
      ],
    });
    expect(handedBack.violations).toEqual([]);
    // A failing attempt whose process was killed with its fail in flight may have handed it back;
    // a succeeding one (its ack in flight) may not: the job would be gone, not claimed again.
    const inFlight = (kind: JobKind): ReturnType<typeof checkChaos> =>
      check({
        accepted: new Map<string, JobKind>([['a', kind]]),
        entries: [...history('a', 1, '1', 10_000, null), ...history('a', 2, '2', 10_200)],
        faults: [fault('kill', 1, 10_101)],
      });
    expect(inFlight('failOnce').counts.leaseOverlaps).toBe(0);
    expect(inFlight('normal').counts.leaseOverlaps).toBe(1);
  });

  test('catches a claim further ahead of the due time than a claim ahead reaches', () => {
    const entries = history('a', 1, '1', 10_000);
    const claim = entries[0] as Extract<ChaosEntry, { phase: 'claim' }>;
    claim.jobs[0]!.runAt = 10_000 + CLAIM_AHEAD_MS;
    // Within the reach, and started at the due time: allowed.
    const start = entries[1] as Extract<ChaosEntry, { phase: 'start' }>;
    start.start = start.startNow = 10_000 + CLAIM_AHEAD_MS;
    expect(check({ entries }).ok).toBe(true);
    claim.jobs[0]!.runAt = 10_001 + CLAIM_AHEAD_MS;
    start.start = start.startNow = 10_001 + CLAIM_AHEAD_MS;
    const report = check({ entries });
    expect(report.counts.earlyClaims).toBe(1);
    expect(report.ok).toBe(false);
  });

  test('catches a handler started before the due time, by either clock', () => {
    for (const which of ['start', 'startNow'] as const) {
      const entries = history('a', 1, '1', 10_000);
      const claim = entries[0] as Extract<ChaosEntry, { phase: 'claim' }>;
      claim.jobs[0]!.runAt = 10_001;
      const start = entries[1] as Extract<ChaosEntry, { phase: 'start' }>;
      start.start = start.startNow = 10_001;
      start[which] = 10_000;
      const report = check({ entries });
      expect(report.counts.earlyStarts, which).toBe(1);
      expect(report.ok).toBe(false);
    }
  });

  test('a job run twice is a duplicate: explained by a fault to the first holder, else a violation', () => {
    const twice = [
      ...history('a', 1, '1', 10_000, { outcome: 'refused: expired' }),
      ...history('a', 2, '2', 12_000),
    ];
    const unexplained = check({ entries: twice });
    expect(unexplained.counts).toMatchObject({ duplicates: 1, duplicatesUnexplained: 1 });
    expect(unexplained.ok).toBe(false);
    // A fault to the *second* holder explains nothing.
    expect(check({ entries: twice, faults: [fault('kill', 2, 10_050)] }).ok).toBe(false);
    const explained = check({ entries: twice, faults: [fault('stall', 1, 10_050, 11_500)] });
    expect(explained.violations).toEqual([]);
    expect(explained.counts.duplicatesUnexplained).toBe(0);
  });

  test('a second run while the first still runs is a concurrent double run', () => {
    const overlapping = [
      ...history('a', 1, '1', 10_000, { outcome: 'refused: expired' }),
      ...history('a', 2, '2', 10_050),
    ];
    const report = check({ entries: overlapping });
    expect(report.counts).toMatchObject({ concurrentDoubleRuns: 1, concurrentUnexplained: 1 });
    expect(report.violations.join('\n')).toMatch(/two places at once/);
  });

  test('an ack applied whose reply was lost is a completion, not a loss; a plain refusal is not', () => {
    const resent = check({
      entries: history('a', 1, '1', 10_000, { outcome: 'refused: not held', resent: true }),
    });
    expect(resent.violations).toEqual([]);
    expect(resent.counts).toMatchObject({ completed: 1, completedReplyLost: 1 });
    const refused = check({ entries: history('a', 1, '1', 10_000, { outcome: 'refused: not held' }) });
    expect(refused.counts.lost).toBe(1);
    // The holder killed with its ack in flight: the ack may have been applied.
    const killed = check({ entries: history('a', 1, '1', 10_000, null), faults: [fault('kill', 1, 10_150)] });
    expect(killed.counts).toMatchObject({ completed: 1, lost: 0 });
    const notKilled = check({ entries: history('a', 1, '1', 10_000, null) });
    expect(notKilled.counts.lost).toBe(1);
  });

  test('with the completed set, Redis says which jobs completed: an applied ack must have left a record', () => {
    const kept = check({ entries: history('a', 1, '1.10000', 10_000), completed: new Set(['a']) });
    expect(kept.violations).toEqual([]);
    expect(kept.counts).toMatchObject({ completed: 1, completedReplyLost: 0, lost: 0 });
    // Acked in the ledger, but Redis has no completed record: the completion was lost.
    const forgotten = check({ entries: history('a', 1, '1.10000', 10_000), completed: new Set() });
    expect(forgotten.counts.lost).toBe(1);
    expect(forgotten.violations.join('\n')).toMatch(
      /lost.*a \(normal\) was acked but has no completed record/,
    );
    // The ack's reply never came (refused on resend, or no reply at all): the record proves it applied.
    for (const settle of [{ outcome: 'refused: not held' as const }, null]) {
      const proven = check({
        entries: history('a', 1, '1.10000', 10_000, settle),
        completed: new Set(['a']),
      });
      expect(proven.violations).toEqual([]);
      expect(proven.counts).toMatchObject({ completed: 1, completedReplyLost: 1, lost: 0 });
    }
    // No record and no applied ack: lost, even where the ledger alone would guess a lost reply.
    const guessed = check({
      entries: history('a', 1, '1.10000', 10_000, null),
      faults: [fault('kill', 1, 10_150)],
      completed: new Set(),
    });
    expect(guessed.counts).toMatchObject({ completed: 0, lost: 1 });
    // Completed and dead at once is caught either way.
    const both = check({
      entries: history('a', 1, '1.10000', 10_000, null),
      completed: new Set(['a']),
      dead: new Map([['a', 'boom']]),
    });
    expect(both.violations.join('\n')).toMatch(/a is both completed and dead/);
  });
});

// --- 2 and 3. Real runs ---------------------------------------------------------------------------

const bounded: ChaosOptions = {
  jobs: 1_000,
  faults: 14,
  kinds: ['kill', 'stop', 'term', 'client-kill', 'stall', 'reset', 'redis-restart'],
  workers: 3,
  concurrency: 8,
  leaseMs: 1_500,
  injectMs: 14_000,
  dueSpreadMs: 3_000,
  persistence: true,
  failAlwaysShare: 0.01,
  failOnceShare: 0.03,
  attempts: 25,
  drainTimeoutMs: 60_000,
  seed: Number(process.env['DELAYQ_CHAOS_SEED'] ?? Date.now() % 1_000_000),
  // A fifth of the jobs in groups: their slots must all be free again after the faults.
  groupShare: 0.2,
};

describe('chaos: real processes, real faults', () => {
  test(`${bounded.jobs} jobs, ${bounded.faults} faults of every kind, appendfsync always: nothing lost, one holder, stale acks refused`, async () => {
    const result = await runChaos(bounded);
    const summary = `seed ${bounded.seed}, ${Math.round(result.durationMs / 1000)} s\n${formatCounts(result.counts, result.faultsByKind)}`;
    console.log(`chaos (bounded): ${summary}`);
    expect(result.violations, summary).toEqual([]);
    expect(result.ok).toBe(true);
    const c = result.counts;
    expect(c.accepted).toBe(bounded.jobs);
    expect(c.lost).toBe(0);
    expect(c.completed + c.dead).toBe(c.accepted);
    // Exactly the jobs that fail on every attempt are dead, each with its reason.
    expect(c.dead).toBe(result.acceptedByKind.failAlways);
    for (const kind of bounded.kinds)
      expect(result.faultsByKind[kind], `${kind} faults injected`).toBeGreaterThan(0);
  }, 240_000);

  test('control: without persistence a Redis restart loses jobs, and the checker says so', async () => {
    const result = await runChaos({
      ...bounded,
      jobs: 400,
      faults: 1,
      kinds: ['redis-restart'],
      injectMs: 5_000,
      // Due well after the restart (at 2.5 to 7.5 s), so some are still waiting when it comes.
      dueSpreadMs: 8_000,
      persistence: false,
      seed: bounded.seed + 1,
      // Failing is what this run must do: nothing to keep.
      keepOnFailure: false,
    });
    console.log(`chaos (control): ${formatCounts(result.counts, result.faultsByKind)}`);
    expect(result.faultsByKind['redis-restart']).toBe(1);
    expect(result.ok).toBe(false);
    expect(result.counts.lost).toBeGreaterThan(0);
    expect(result.violations.join('\n')).toMatch(/accepted jobs lost/);
  }, 180_000);
});
