// The table `npm run bench` ends with (bench/lib/goals.ts): each goal's verdict from the figures of all
// three systems, and what it says when a figure is missing (not run, workload failed, producer behind).
import { describe, expect, it } from 'vitest';
import type { SystemName } from '../../bench/adapters/adapter.js';
import { goalsTable } from '../../bench/lib/goals.js';
import { FULL } from '../../bench/lib/profile.js';
import type { Figure } from '../../bench/lib/recorder.js';
import type { RunResults } from '../../bench/lib/results.js';
import type { W8Step } from '../../bench/workloads/w8-capacity.js';

type Values = Partial<Record<SystemName, number>>;

/** A run's results holding only the given figures (median = the one value). */
function results(figures: Array<[string, string, Values]>, extra: Partial<RunResults> = {}): RunResults {
  const all: Figure[] = figures.flatMap(([workload, metric, values]) =>
    (Object.entries(values) as Array<[SystemName, number]>).map(([system, v]) => ({
      workload,
      metric,
      unit: '',
      better: 'higher' as const,
      system,
      values: [v],
      median: v,
    })),
  );
  return {
    date: '2026-11-30T18:00:00.000Z',
    command: 'npm run bench',
    profile: FULL,
    environment: { nproc: 2, cpuModel: 'test cpu', memoryGiB: 1, versions: {}, commit: 'abc1234' },
    systems: ['delayq', 'bullmq', 'bee-queue'],
    workloads: ['W1', 'W2', 'W3', 'W4', 'W5', 'W6', 'W7', 'W8', 'ceiling'],
    secondsByWorkload: {},
    loadAverage: { start: 0.5, end: 0.6 },
    loadAverages: { start: [0.5, 0.4, 0.3], end: [0.6, 0.5, 0.4] },
    totalSeconds: 1,
    errors: {},
    figures: all,
    ceilings: [],
    distributions: {},
    details: {},
    ...extra,
  };
}

/** The table row whose goal column starts with `label`, split into its cells. */
function row(table: string, label: string): string[] {
  const line = table.split('\n').find((l) => l.startsWith(`| ${label}`));
  if (!line) throw new Error(`no row '${label}' in:\n${table}`);
  return line
    .split('|')
    .slice(1, -1)
    .map((c) => c.trim());
}

function step(system: SystemName, rate: number, verdict: W8Step['verdict'], p99: number): W8Step {
  return {
    system,
    rate,
    verdict,
    jobs: rate * 10,
    p50: 1,
    p99,
    max: p99,
    serverP99: null,
    addedPerSec: verdict === 'producer behind' ? rate * 0.8 : rate,
    maxTickLagMs: 0,
    maxAddMs: 1,
    load: 0.5,
  };
}

describe('goalsTable', () => {
  it('holds W1 c50 only when delayq is at least 2x bee-queue and 3.5x BullMQ, with the ratios shown', () => {
    const c50 = (delayq: number) =>
      row(
        goalsTable(results([['W1', 'processing c50', { delayq, 'bee-queue': 10_000, bullmq: 5_000 }]])),
        'W1 c50 processing',
      );
    expect(c50(20_000)).toEqual([
      'W1 c50 processing (jobs/s)',
      '5,000',
      '10,000',
      '20,000',
      '≥ 2× bee-queue and ≥ 3.5× BullMQ',
      'holds (2.00× bee-queue, 4.00× BullMQ)',
    ]);
    // Far ahead of BullMQ is not enough when bee-queue is not doubled.
    expect(c50(19_000).at(-1)).toBe('**missed** (1.90× bee-queue, 3.80× BullMQ)');
  });

  it('says a bound holds but its aim is not yet met, and misses above the bound', () => {
    const cpu = (delayq: number) =>
      row(
        goalsTable(
          results([['W1', 'Redis CPU per processed job c50', { delayq, bullmq: 70, 'bee-queue': 35 }]]),
        ),
        'Redis CPU per processed job',
      ).at(-1);
    expect(cpu(9)).toBe('holds');
    expect(cpu(12)).toBe('holds (aim 10 not yet)');
    expect(cpu(16)).toBe('**missed**');
  });

  it("judges lateness from the add call and shows delayq's Redis-clock figure beside it", () => {
    const table = goalsTable(
      results([
        ['W2', 'lateness at handler start p99', { delayq: 12, bullmq: 90, 'bee-queue': 990 }],
        ['W2', 'lateness p99', { delayq: 8, bullmq: 90, 'bee-queue': 990 }],
      ]),
    );
    const cells = row(table, 'W2 p99 lateness');
    expect(cells[3]).toBe('12');
    expect(cells.at(-1)).toBe('**missed** (Redis clock 8 ms)');
  });

  it('shows a W7 backlog that was not run, and judges flatness on the ones that were', () => {
    const figures: Array<[string, string, Values]> = [
      ['W7', 'Redis CPU per processed job, 100,000 waiting', { delayq: 10, bullmq: 60, 'bee-queue': 40 }],
      ['W7', 'Redis CPU per processed job, 1,000,000 waiting', { delayq: 16, bullmq: 61, 'bee-queue': 41 }],
    ];
    const cells = row(goalsTable(results(figures)), 'W7 claim cost');
    expect(cells[0]).toBe('W7 claim cost: Redis CPU per processed job (µs), at 10⁵ / 10⁶ / 10⁷ waiting');
    expect(cells[3]).toBe('10 / 16 / not run');
    // 16 is more than 1.5 times 10: not flat.
    expect(cells.at(-1)).toBe('**missed** (10 → 16; 10⁷ not run: `--w7-max=1e7`)');
  });

  it('gives W8 the last step held, and says when the producer, not the queue, ended the search', () => {
    const steps = [
      step('delayq', 500, 'held', 3),
      step('delayq', 1_000, 'held', 4),
      step('delayq', 2_000, 'producer behind', 5),
      step('bullmq', 500, 'late', 90),
      step('bee-queue', 500, 'late', 990),
    ];
    const table = goalsTable(results([], { details: { 'W8 steps': steps } }));
    const capacity = row(table, 'W8 capacity');
    expect(capacity.slice(1, 4)).toEqual(['0 (no step held)', '0 (no step held)', '1,000 (p99 4 ms)']);
    expect(capacity.at(-1)).toBe('**missed**');
    const stopped = row(table, 'W8 the step that ended the search');
    expect(stopped[3]).toBe('2,000: producer behind (added 1,600/s)');
    expect(stopped.at(-1)).toContain('the producer fell behind');
  });

  it('marks the figures of a failed workload as failed, and names the failure above the table', () => {
    const table = goalsTable(results([], { errors: { W5: 'redis-server exited' } }));
    expect(row(table, 'Bytes per delayed job').slice(1, 4)).toEqual(['failed', 'failed', 'failed']);
    expect(table).toContain('**W5 failed in this run:** redis-server exited');
  });

  it('prints the load average at start and end, and warns when it was above the core count', () => {
    const quiet = goalsTable(results([]));
    expect(quiet).toContain('at start 0.50 / 0.40 / 0.30, at end 0.60 / 0.50 / 0.40');
    expect(quiet).not.toContain('busy');
    const busy = goalsTable(
      results([], { loadAverages: { start: [5.1, 3, 1], end: [4, 3, 1] }, loadAverage: { start: 5.1 } }),
    );
    expect(busy).toContain('The machine was busy (1-minute load above its 2 cores during the run');
    // Only the 5- and 15-minute averages are high: that is what ran before the bench, not during it.
    const before = goalsTable(
      results([], {
        loadAverages: { start: [0.9, 2.5, 3.1], end: [1.4, 1.3, 1.8] },
        loadAverage: { W1: 1.2 },
      }),
    );
    expect(before).not.toContain('busy');
  });
});
