/**
 * Issue 14's goals as one table: one row per goal, one column per system, the goal and whether
 * delayq meets it, under a header that names the commit, the machine and its load at the start and
 * end of the run. `npm run bench` prints it last and writes it to bench/results/, so the same text
 * goes into docs/benchmarks.md and the design note unchanged.
 */
import type { SystemName } from '../adapters/adapter.js';
import type { Figure } from './recorder.js';
import type { RunResults } from './results.js';
import type { W8Step } from '../workloads/w8-capacity.js';

/** The table's columns, in the issue's order. */
const COLUMNS: ReadonlyArray<{ system: SystemName; title: string }> = [
  { system: 'bullmq', title: 'BullMQ' },
  { system: 'bee-queue', title: 'bee-queue' },
  { system: 'delayq', title: 'delayq' },
];

/** What a row says about delayq: holds, missed, or cannot tell (with why). */
interface Verdict {
  holds: boolean | undefined;
  note?: string;
}

interface Row {
  label: string;
  cells: Record<SystemName, string>;
  goal: string;
  verdict: Verdict;
}

/** A number as the table shows it: whole above 100, one decimal above 10, two below. */
export function fmt(value: number | undefined): string {
  if (value === undefined || Number.isNaN(value)) return '–';
  if (!Number.isFinite(value)) return 'never';
  const abs = Math.abs(value);
  const digits = abs >= 100 ? 0 : abs >= 10 ? 1 : 2;
  return value.toLocaleString('en-US', { maximumFractionDigits: digits });
}

/** 10⁵ for 100000; other sizes as plain numbers. */
function power(n: number): string {
  const exponent = Math.log10(n);
  if (!Number.isInteger(exponent)) return n.toLocaleString('en-US');
  const superscript = '⁰¹²³⁴⁵⁶⁷⁸⁹';
  return `10${[...String(exponent)].map((d) => superscript[Number(d)]).join('')}`;
}

function figure(
  results: RunResults,
  workload: string,
  metric: string,
  system: SystemName,
): Figure | undefined {
  return results.figures.find((f) => f.workload === workload && f.metric === metric && f.system === system);
}

/** A cell: the median, "failed" when its workload failed, "not run" when the run left it out. */
function cell(results: RunResults, workload: string, metric: string, system: SystemName): string {
  const f = figure(results, workload, metric, system);
  if (f) return fmt(f.median);
  if (results.errors[workload] !== undefined) return 'failed';
  return results.workloads.includes(workload) && results.systems.includes(system) ? '–' : 'not run';
}

function value(
  results: RunResults,
  workload: string,
  metric: string,
  system: SystemName,
): number | undefined {
  return figure(results, workload, metric, system)?.median;
}

function cells(results: RunResults, workload: string, metric: string): Record<SystemName, string> {
  return {
    bullmq: cell(results, workload, metric, 'bullmq'),
    'bee-queue': cell(results, workload, metric, 'bee-queue'),
    delayq: cell(results, workload, metric, 'delayq'),
  };
}

/** delayq's value against an upper bound, and an aim below it when the issue names one. */
function atMost(v: number | undefined, bound: number, aim?: number): Verdict {
  if (v === undefined || Number.isNaN(v)) return { holds: undefined };
  // A value a hair above the bound prints as the bound itself: say what was measured.
  if (v > bound)
    return fmt(v) === fmt(bound) ? { holds: false, note: `measured ${v.toFixed(4)}` } : { holds: false };
  return aim !== undefined && v > aim ? { holds: true, note: `aim ${fmt(aim)} not yet` } : { holds: true };
}

/**
 * delayq's lateness by the Redis clock (claim time minus due time) beside the verdict: it leaves out
 * the add call and the trip to the handler, so a reader sees how much of the lateness is there.
 */
function withRedisClock(v: Verdict, redisClock: number | undefined): Verdict {
  if (redisClock === undefined) return v;
  const note = `Redis clock ${fmt(redisClock)} ms`;
  return { ...v, note: v.note ? `${v.note}; ${note}` : note };
}

/** delayq's value against k times each named system's, with the ratios shown. */
function timesOthers(
  results: RunResults,
  workload: string,
  metric: string,
  factors: Partial<Record<SystemName, number>>,
): Verdict {
  const own = value(results, workload, metric, 'delayq');
  const ratios: string[] = [];
  let holds: boolean | undefined = own === undefined ? undefined : true;
  for (const [system, k] of Object.entries(factors) as Array<[SystemName, number]>) {
    const other = value(results, workload, metric, system);
    if (own === undefined || other === undefined || other <= 0) {
      holds = undefined;
      continue;
    }
    ratios.push(`${(own / other).toFixed(2)}× ${title(system)}`);
    if (holds !== undefined && own < k * other) holds = false;
  }
  return { holds, ...(ratios.length > 0 && { note: ratios.join(', ') }) };
}

function title(system: SystemName): string {
  return COLUMNS.find((c) => c.system === system)!.title;
}

/** The W7 backlog sizes the table shows: 10⁵ and up as the issue asks (10⁷ named even when not run). */
function w7Sizes(results: RunResults): { shown: number[]; measured: number[] } {
  const measured = results.profile.w7.waiting.filter((n) =>
    results.figures.some(
      (f) => f.workload === 'W7' && f.metric.endsWith(`, ${n.toLocaleString('en-US')} waiting`),
    ),
  );
  const large = measured.filter((n) => n >= 100_000);
  // A quick run has only small backlogs: show those rather than an empty row.
  const shown = large.length > 0 ? large : [...measured];
  for (const n of [100_000, 1_000_000, 10_000_000]) {
    if (!shown.includes(n) && (large.length > 0 || n === 10_000_000)) shown.push(n);
  }
  return { shown: shown.sort((a, b) => a - b), measured };
}

/** One W7 row: the figure at every size, "a / b / c", and whether delayq's stays flat. */
function w7Row(
  results: RunResults,
  label: string,
  metric: (size: string) => string,
  flat: { goal: string; holds(first: number, v: number): boolean } | undefined,
): Row {
  const { shown, measured } = w7Sizes(results);
  const at = (system: SystemName, n: number): number | undefined =>
    value(results, 'W7', metric(n.toLocaleString('en-US')), system);
  const joined = (system: SystemName): string =>
    shown
      .map((n) =>
        measured.includes(n) ? cell(results, 'W7', metric(n.toLocaleString('en-US')), system) : 'not run',
      )
      .join(' / ');
  const missing = shown.filter((n) => !measured.includes(n));
  const notRun =
    missing.length > 0
      ? `${missing.map(power).join(', ')} not run${missing.includes(10_000_000) ? ': `--w7-max=1e7`' : ''}`
      : undefined;
  let verdict: Verdict = { holds: undefined };
  if (flat) {
    const own = shown.map((n) => at('delayq', n)).filter((v): v is number => v !== undefined);
    if (own.length >= 2) {
      const holds = own.every((v) => flat.holds(own[0]!, v));
      verdict = { holds, note: `${fmt(own[0])} → ${fmt(own[own.length - 1])}` };
    }
  }
  if (notRun) verdict = { ...verdict, note: [verdict.note, notRun].filter(Boolean).join('; ') };
  return {
    label: `${label}, at ${shown.map(power).join(' / ')} waiting`,
    cells: { bullmq: joined('bullmq'), 'bee-queue': joined('bee-queue'), delayq: joined('delayq') },
    goal: flat?.goal ?? 'printed',
    verdict,
  };
}

/** The last W8 repetition's steps of one system, lowest rate first. */
function w8Steps(results: RunResults, system: SystemName): W8Step[] {
  const all = (results.details['W8 steps'] as W8Step[] | undefined) ?? [];
  const own = all.filter((s) => s.system === system);
  // Each repetition starts again at the lowest rate: the last run of the search is the last one.
  const lowest = Math.min(...own.map((s) => s.rate));
  const lastStart = own.map((s) => s.rate).lastIndexOf(lowest);
  return lastStart < 0 ? [] : own.slice(lastStart);
}

/** W8 capacity and, in a second row, the step that ended each system's search (and why). */
function w8Rows(results: RunResults): Row[] {
  // Results saved before W8 existed have no w8 in their profile.
  const w8 = results.profile.w8 as RunResults['profile']['w8'] | undefined;
  const top = Math.max(...(w8?.rates ?? []));
  const capacity: Record<SystemName, string> = { bullmq: '', 'bee-queue': '', delayq: '' };
  const stopped: Record<SystemName, string> = { bullmq: '', 'bee-queue': '', delayq: '' };
  for (const { system } of COLUMNS) {
    const steps = w8Steps(results, system);
    const held = steps.filter((s) => s.verdict === 'held').at(-1);
    const missed = steps.find((s) => s.verdict !== 'held');
    if (steps.length === 0) {
      const metric = `capacity at p99 lateness ≤ ${w8?.p99LimitMs ?? 10} ms`;
      capacity[system] = stopped[system] = cell(results, 'W8', metric, system);
      continue;
    }
    capacity[system] = held
      ? `${held.rate === top ? '≥ ' : ''}${fmt(held.rate)} (p99 ${fmt(held.p99 ?? undefined)} ms)`
      : '0 (no step held)';
    if (!missed) stopped[system] = `none: the top step (${fmt(top)}) held`;
    else if (missed.verdict === 'producer behind')
      stopped[system] = `${fmt(missed.rate)}: producer behind (added ${fmt(missed.addedPerSec)}/s)`;
    else if (missed.verdict === 'not drained') stopped[system] = `${fmt(missed.rate)}: not drained`;
    else stopped[system] = `${fmt(missed.rate)}: late (p99 ${fmt(missed.p99 ?? undefined)} ms)`;
  }
  const own = w8Steps(results, 'delayq');
  const held = own.filter((s) => s.verdict === 'held').at(-1);
  const missed = own.find((s) => s.verdict !== 'held');
  const sustained = held?.rate ?? 0;
  const verdict: Verdict =
    own.length === 0
      ? { holds: undefined }
      : sustained < 10_000
        ? { holds: false }
        : sustained < 20_000
          ? { holds: true, note: 'aim 20,000 not yet' }
          : { holds: true };
  const limit = w8?.p99LimitMs ?? 10;
  return [
    {
      label: `W8 capacity: last step held with p99 ≤ ${limit} ms and the producer kept up (jobs/s)`,
      cells: capacity,
      goal: '≥ 10,000 (aim 20,000)',
      verdict,
    },
    {
      label: 'W8 the step that ended the search',
      cells: stopped,
      goal: 'why the search stopped',
      verdict: {
        holds: undefined,
        ...(missed?.verdict === 'producer behind' && {
          note: 'the producer fell behind: the capacity is a lower bound on this machine',
        }),
      },
    },
  ];
}

/** Every row of the table, in the issue's order. */
function rows(results: RunResults): Row[] {
  const row = (label: string, workload: string, metric: string, goal: string, verdict: Verdict): Row => ({
    label,
    cells: cells(results, workload, metric),
    goal,
    verdict,
  });
  const own = (workload: string, metric: string) => value(results, workload, metric, 'delayq');
  const c1 = value(results, 'W1', 'processing c1', 'delayq');
  const bestOtherC1 = Math.max(
    value(results, 'W1', 'processing c1', 'bullmq') ?? NaN,
    value(results, 'W1', 'processing c1', 'bee-queue') ?? NaN,
  );
  return [
    row(
      'Redis CPU per processed job, W1 c50 (µs)',
      'W1',
      'Redis CPU per processed job c50',
      '≤ 15 (aim 10)',
      atMost(own('W1', 'Redis CPU per processed job c50'), 15, 10),
    ),
    row(
      'Redis commands per processed job, W1 c50 (inside scripts too)',
      'W1',
      'Redis commands per processed job c50',
      '≤ 3',
      atMost(own('W1', 'Redis commands per processed job c50'), 3),
    ),
    row(
      'Redis commands per processed job, W1 c1 (inside scripts too)',
      'W1',
      'Redis commands per processed job c1',
      '≤ 10',
      atMost(own('W1', 'Redis commands per processed job c1'), 10),
    ),
    row(
      'Script calls per processed job, W1 c1',
      'W1',
      'script calls per processed job c1',
      '≤ 1',
      atMost(own('W1', 'script calls per processed job c1'), 1),
    ),
    row(
      'W1 c50 processing (jobs/s)',
      'W1',
      'processing c50',
      '≥ 2× bee-queue and ≥ 3.5× BullMQ',
      timesOthers(results, 'W1', 'processing c50', { 'bee-queue': 2, bullmq: 3.5 }),
    ),
    row(
      'W1 c1 processing (jobs/s)',
      'W1',
      'processing c1',
      'ahead of both',
      c1 === undefined || Number.isNaN(bestOtherC1)
        ? { holds: undefined }
        : { holds: c1 > bestOtherC1, note: `${(c1 / bestOtherC1).toFixed(2)}× the faster other` },
    ),
    row(
      'Bulk add, W1 (jobs/s)',
      'W1',
      'bulk add',
      '≥ 1.5× bee-queue',
      timesOthers(results, 'W1', 'bulk add', { 'bee-queue': 1.5 }),
    ),
    row(
      `Bytes per delayed job, W5 (${results.profile.w5.payloadBytes} B payload)`,
      'W5',
      `bytes per delayed job (${results.profile.w5.payloadBytes} B payload)`,
      '≤ 300',
      atMost(own('W5', `bytes per delayed job (${results.profile.w5.payloadBytes} B payload)`), 300),
    ),
    w7Row(
      results,
      'W7 claim cost: Redis CPU per processed job (µs)',
      (n) => `Redis CPU per processed job, ${n} waiting`,
      {
        goal: 'flat: each ≤ 1.5× the first',
        holds: (first, v) => v <= 1.5 * first,
      },
    ),
    w7Row(
      results,
      'W7 add-to-start latency of one job, median (ms)',
      (n) => `add-to-start latency, ${n} waiting (median)`,
      {
        goal: 'flat: each ≤ the first + 1 ms',
        holds: (first, v) => v <= first + 1,
      },
    ),
    w7Row(results, 'W7 bytes per waiting job', (n) => `bytes per waiting job, ${n} waiting`, undefined),
    row(
      'W2 p99 lateness from the add call (ms)',
      'W2',
      'lateness at handler start p99',
      '≤ 10',
      withRedisClock(atMost(own('W2', 'lateness at handler start p99'), 10), own('W2', 'lateness p99')),
    ),
    row(
      'W3 single job, median lateness from the add call (ms)',
      'W3',
      'single job lateness at handler start p50',
      '≤ 1',
      withRedisClock(
        atMost(own('W3', 'single job lateness at handler start p50'), 1),
        own('W3', 'single job lateness p50'),
      ),
    ),
    ...w8Rows(results),
  ];
}

function verdictText(v: Verdict): string {
  const word = v.holds === undefined ? '–' : v.holds ? 'holds' : '**missed**';
  return v.note ? `${word} (${v.note})` : word;
}

/** Load average as "1.20 / 0.80 / 0.50"; saved results from before the 5- and 15-minute figures show one. */
function loads(values: readonly number[] | undefined): string {
  return values === undefined ? 'not recorded' : values.map((v) => v.toFixed(2)).join(' / ');
}

/** The header and the table, as Markdown. */
export function goalsTable(results: RunResults): string {
  const e = results.environment;
  const commit = e.commit ?? /commit ([^,)]+)/.exec(e.versions['delayq'] ?? '')?.[1] ?? 'unknown';
  const start = results.loadAverages?.start;
  const end = results.loadAverages?.end;
  // 1-minute figures only: the 5- and 15-minute averages at the start still hold what ran before
  // the bench, which would flag a quiet run as busy.
  const busiest = Math.max(start?.[0] ?? 0, end?.[0] ?? 0, ...Object.values(results.loadAverage));
  const out: string[] = [];
  out.push(
    `delayq commit ${commit}${e.dirty ? ' with uncommitted changes in src/' : ''}, ${results.date.slice(0, 16).replace('T', ' ')} UTC, \`${results.command}\` (profile '${results.profile.name}', ${results.totalSeconds} s).`,
  );
  out.push('');
  out.push(
    `Machine: ${e.nproc} cores (${e.cpuModel}); redis-server ${e.versions['redis-server'] ?? 'unknown'}, node ${e.versions['node'] ?? 'unknown'}, bullmq ${e.versions['bullmq'] ?? '?'}, bee-queue ${e.versions['bee-queue'] ?? '?'}. Load average (1 / 5 / 15 min): at start ${loads(start)}, at end ${loads(end)}.`,
  );
  if (results.profile.name === 'quick') {
    out.push('');
    out.push('**Quick profile: small counts and short steps that check the harness runs; not a result.**');
  }
  if (busiest > e.nproc) {
    out.push('');
    out.push(
      `**The machine was busy (1-minute load above its ${e.nproc} cores during the run; the bench's own processes count too): every figure is skewed by it.**`,
    );
  }
  const failed = Object.entries(results.errors);
  for (const [w, message] of failed) {
    out.push('');
    out.push(`**${w} failed in this run:** ${message}`);
  }
  out.push('');
  out.push(`| goal | ${COLUMNS.map((c) => c.title).join(' | ')} | target (delayq) | holds |`);
  out.push(`|---|${COLUMNS.map(() => '---:').join('|')}|---|---|`);
  for (const r of rows(results)) {
    out.push(
      `| ${r.label} | ${COLUMNS.map((c) => r.cells[c.system]).join(' | ')} | ${r.goal} | ${verdictText(r.verdict)} |`,
    );
  }
  out.push('');
  out.push(
    "Lateness is measured from the add call for every system: the handler's `Date.now()` minus (`Date.now()` at the add call + delay); beside delayq's verdict, its lateness by the Redis clock (claim time minus due time). Commands per job count every command Redis ran, the ones scripts ran inside included (INFO commandstats), on a redis-server of each run's own; script calls are the EVAL, EVALSHA and FCALL among them.",
  );
  return `${out.join('\n')}\n`;
}
