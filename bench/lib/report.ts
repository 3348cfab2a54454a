/** Turns a run's results into docs/benchmarks.md and the lateness chart (SVG, no dependencies). */
import type { SystemName } from '../adapters/adapter.js';
import { goalsTable } from './goals.js';
import { FULL, type Profile } from './profile.js';
import type { Figure } from './recorder.js';
import type { W8Step } from '../workloads/w8-capacity.js';
import type { RunResults } from './results.js';
import { describeBatchWorkload } from '../workloads/batch-throughput.js';
import { describeGroupsWorkload } from '../workloads/groups.js';

/** A number as the tables show it. */
function fmt(value: number | null | undefined, unit: string, capS?: number): string {
  if (value === null || value === undefined || Number.isNaN(value)) return '–';
  if (!Number.isFinite(value)) return capS === undefined ? 'never' : `never within ${capS} s`;
  const abs = Math.abs(value);
  const digits = abs >= 100 || unit === 'jobs' ? 0 : abs >= 10 ? 1 : 2;
  return value.toLocaleString('en-US', { minimumFractionDigits: 0, maximumFractionDigits: digits });
}

function find(results: RunResults, workload: string, metric: string, system: SystemName): Figure | undefined {
  return results.figures.find((f) => f.workload === workload && f.metric === metric && f.system === system);
}

/** The cap (s) of a W6 figure, for "never within N s". */
function capFor(results: RunResults, figure: Figure): number | undefined {
  if (figure.workload !== 'W6') return undefined;
  const key = figure.metric.includes('defaults') ? 'W6 cap (default)' : 'W6 cap (short)';
  const ms = results.details[key];
  return typeof ms === 'number' ? ms / 1000 : undefined;
}

function figureTable(results: RunResults, workload: string): string {
  const metrics = [...new Set(results.figures.filter((f) => f.workload === workload).map((f) => f.metric))];
  if (metrics.length === 0) return '';
  const head = `| figure | ${results.systems.join(' | ')} |\n|---|${results.systems.map(() => '---:').join('|')}|\n`;
  const rows = metrics.map((metric) => {
    const cells = results.systems.map((system) => {
      const f = find(results, workload, metric, system);
      if (!f) return '–';
      const cap = capFor(results, f);
      const med = fmt(f.median, f.unit, cap);
      const finite = f.values.filter(Number.isFinite);
      const spread =
        f.values.length > 1 && finite.length === f.values.length
          ? ` <sub>(${fmt(Math.min(...finite), f.unit)}–${fmt(Math.max(...finite), f.unit)})</sub>`
          : '';
      return `${med}${spread}`;
    });
    const unit = results.figures.find((f) => f.workload === workload && f.metric === metric)?.unit ?? '';
    const better = results.figures.find((f) => f.workload === workload && f.metric === metric)?.better;
    return `| ${metric} (${unit}, ${better === 'higher' ? 'higher' : 'lower'} is better) | ${cells.join(' | ')} |`;
  });
  return head + rows.join('\n') + '\n';
}

interface Target {
  label: string;
  workload: string;
  metric: string;
  text: string;
  /** Whether delayq's median meets the target, given the medians of all systems. */
  met(m: Partial<Record<SystemName, number>>): boolean | undefined;
}

/**
 * Issue 5's targets that issue 14's goals (bench/lib/goals.ts) do not restate; issue 14's supersede the
 * rest (W1 c50 against bee-queue, bulk add, bytes per job, Redis CPU, lateness).
 */
const TARGETS: Target[] = [
  {
    label: 'W2 processing jobs/s',
    workload: 'W2',
    metric: 'processing',
    text: '≥ 5× BullMQ',
    met: (m) => ratio(m.delayq, m.bullmq, 5),
  },
  {
    label: 'W3 lateness p99, 500 jobs over 10 s (ms)',
    workload: 'W3',
    metric: 'lateness p99',
    text: '≤ 2 ms',
    met: (m) => below(m.delayq, 2),
  },
  {
    label: 'W4 idle commands/s per worker (empty queue)',
    workload: 'W4',
    metric: 'idle commands/s, empty queue',
    text: '≤ 0.5',
    met: (m) => below(m.delayq, 0.5),
  },
  {
    label: 'W6 recovery after SIGKILL, defaults (s)',
    workload: 'W6',
    metric: 'recovery after SIGKILL, defaults',
    text: '≤ lease + 1 s = 16 s',
    met: (m) => below(m.delayq, 16),
  },
];

function ratio(a: number | undefined, b: number | undefined, k: number): boolean | undefined {
  return a === undefined || b === undefined || Number.isNaN(b) ? undefined : a >= k * b;
}

function below(a: number | undefined, limit: number): boolean | undefined {
  return a === undefined ? undefined : a <= limit;
}

function targetTable(results: RunResults): string {
  const rows: string[] = [];
  for (const t of TARGETS) {
    const medians: Partial<Record<SystemName, number>> = {};
    for (const system of results.systems) {
      const f = find(results, t.workload, t.metric, system);
      if (f) medians[system] = f.median;
    }
    if (Object.keys(medians).length === 0) continue;
    const met = t.met(medians);
    const cells = (['bullmq', 'bee-queue', 'delayq'] as const).map((s) => {
      const f = find(results, t.workload, t.metric, s);
      return f ? fmt(f.median, f.unit, capFor(results, f)) : '–';
    });
    rows.push(
      `| ${t.label} | ${cells.join(' | ')} | ${t.text} | ${met === undefined ? '–' : met ? 'met' : '**missed**'} |`,
    );
  }
  if (rows.length === 0) return '';
  return `| figure | BullMQ | bee-queue | delayq | delayq target | |\n|---|---:|---:|---:|---|---|\n${rows.join('\n')}\n`;
}

const TITLES: Record<string, string> = {
  W1: 'W1 immediate throughput',
  W2: 'W2 delayed throughput and lateness',
  W3: 'W3 precision',
  W4: 'W4 idle cost',
  W5: 'W5 memory',
  W6: 'W6 crash recovery',
  W7: 'W7 scale',
  W8: 'W8 capacity at the lateness bound',
  groups: 'Groups: claim throughput and the smallest tenants under a skewed load (issue 16)',
  batch: 'Batch handlers against one-job handlers (issue 16)',
};

function describeWorkload(p: Profile, w: string, results: RunResults): string {
  switch (w) {
    case 'W1':
      return `${p.w1.jobs.toLocaleString('en-US')} tiny jobs (${p.w1.jobsAtConcurrency1.toLocaleString('en-US')} at concurrency 1) added with addBulk in chunks of ${p.bulkSize}, then run by one worker process at concurrency ${p.w1.concurrencies.join(' and ')}; each phase on a redis-server of its own. One warm-up add (connect, script load; its job runs first, untimed) precedes the timing; bulk add is timed in the phase with the most jobs. Processing rate: first handler start to last completion, timed in the worker process. Redis CPU, commands and script calls (EVAL, EVALSHA, FCALL) per job: INFO cpu / commandstats deltas over each phase; commands count those run inside scripts too.`;
    case 'W2':
      return `${p.w2.jobs.toLocaleString('en-US')} jobs due uniformly over ${p.w2.spanMs / 1000} s (all added before the first is due), one worker process at concurrency ${p.w2.concurrency}.`;
    case 'W3':
      return `${p.w3.jobs} jobs due uniformly over ${p.w3.spanMs / 1000} s at concurrency ${p.w3.concurrency}; then one job delayed ${p.w3.singleDelayMs} ms on an idle queue, ${p.w3.singles} times in a row (those ${p.w3.singles} samples are the repetitions).`;
    case 'W4':
      return `One idle worker process (concurrency 1), on an empty queue and with ${p.w4.waiting.toLocaleString('en-US')} jobs waiting a day ahead; commands counted over ${p.w4.windowMs / 1000} s after ${p.w4.warmupMs / 1000} s of warm-up, from INFO commandstats (commands run inside scripts included; the bench's own INFO calls left out). Each case has its own redis-server and all run at once; one repetition.`;
    case 'W5':
      return `Redis used_memory growth per job for ${p.w5.jobs.toLocaleString('en-US')} jobs delayed an hour, each with a payload whose JSON is ${p.w5.payloadBytes} bytes; ${p.w5.reps} repetition(s) (the figure is deterministic to a few bytes).`;
    case 'W6':
      return 'Two idle worker processes (concurrency 1); one job is added; the process that starts it is SIGKILLed at once; the figure is the time from the kill to the other process starting the job. "Defaults": each system untouched (delayq lease 15 s; BullMQ lock 30 s, stalled check every 30 s; bee-queue never looks for stalled jobs unless checkStalledJobs() is called). "1 s": delayq leaseMs 1000; BullMQ lockDuration and stalledInterval 1000; bee-queue stallInterval 1000 with checkStalledJobs(1000). Each case has its own redis-server and all run at once; one repetition.';
    case 'W7': {
      // Results saved before the fill time was recorded have no such row.
      const fill = results.figures.some((f) => f.workload === 'W7' && f.metric.startsWith('backlog fill'))
        ? `; "backlog fill" is the time to add them with addBulk in chunks of ${p.bulkSize}`
        : '';
      const bytes = results.figures.some((f) => f.workload === 'W7' && f.metric.startsWith('bytes per'))
        ? '; "bytes per waiting job" is the growth of Redis used_memory over the fill divided by N (at small N the fixed cost of a queue weighs in)'
        : '';
      return `With N jobs waiting a day ahead (${p.w7.waiting.map((n) => n.toLocaleString('en-US')).join(', ')}${fill}${bytes}): median time from add to handler start of one immediate job on an idle worker (${p.w7.singles} samples), then ${p.w7.jobs.toLocaleString('en-US')} immediate jobs at concurrency ${p.w7.concurrency}; ${p.w7.reps} repetition(s). \`--w7-max=1e7\` adds 10⁷ waiting (not in the default run: its fill alone is about ten times the 10⁶ one per system).`;
    }
    case 'W8':
      return describeW8(p);
    case 'groups':
      return describeGroupsWorkload(p);
    case 'batch':
      return describeBatchWorkload(p);
    default:
      return '';
  }
}

/** What W8 does, from the profile. */
function describeW8(p: Profile): string {
  // Results saved before W8 existed have no w8 in their profile: described with today's full one.
  const w = (p.w8 as Profile['w8'] | undefined) ?? FULL.w8;
  const rates = w.rates.map((r) => r.toLocaleString('en-US')).join(', ');
  return `The highest arrival rate of delayed jobs each system sustains with p99 lateness ≤ ${w.p99LimitMs} ms. For each rate (${rates} jobs/s, lowest first), on a fresh queue with one worker process at concurrency ${w.concurrency}: the bench adds rate × ${w.tickMs / 1000} jobs every ${w.tickMs} ms for ${w.stepMs / 1000} s, each due ${w.leadMs / 1000}–${(w.leadMs + w.spreadMs) / 1000} s after its add call (spread evenly). Lateness is the handler's \`Date.now()\` minus (\`Date.now()\` at the add call + delay), for every system alike, so the add call's own time counts. A step holds when every job ran, p99 ≤ ${w.p99LimitMs} ms and the producer kept up (the last add returned within a tick of the step's end, and no tick started more than five ticks late); a step where the producer fell behind is reported as such, not as a pass. One warm-up job per step (not measured) connects the producer first. The first step that does not hold ends the search; the figure is the last step that held (0: none held; a system that held the highest step sustains at least that); ${w.reps} repetition(s). \`--only=W8 --w8-steps=500,1000 --w8-seconds=30\` changes the steps and their length.`;
}

/** Every W8 step as a table: rate by system, with p99 lateness and the verdict. */
function w8StepTable(results: RunResults): string {
  const steps = results.details['W8 steps'] as W8Step[] | undefined;
  if (!Array.isArray(steps) || steps.length === 0) return '';
  const rates = [...new Set(steps.map((s) => s.rate))].sort((a, b) => a - b);
  const cell = (s: W8Step | undefined): string => {
    if (!s) return '–';
    const p99 = s.p99 === null ? 'not all ran' : `p99 ${fmt(s.p99, 'ms')} ms`;
    const verdict = s.verdict === 'held' ? 'held' : `**${s.verdict}**`;
    const producer = s.verdict === 'producer behind' ? ` (added ${fmt(s.addedPerSec, 'jobs')}/s)` : '';
    return `${verdict}, ${p99}${producer}`;
  };
  const head = `| offered rate (jobs/s) | ${results.systems.join(' | ')} |\n|---:|${results.systems.map(() => '---').join('|')}|\n`;
  const rows = rates.map((rate) => {
    const cells = results.systems.map((system) =>
      steps
        .filter((s) => s.system === system && s.rate === rate)
        .map(cell)
        .join('; '),
    );
    return `| ${rate.toLocaleString('en-US')} | ${cells.map((c) => c || '–').join(' | ')} |`;
  });
  return `Every step (a system's search ends at its first step that did not hold):\n\n${head}${rows.join('\n')}\n`;
}

/** What the soak does; its figures are printed by the soak itself, not kept in this page's run. */
const SOAK =
  '`bench/soak.ts`: delayq alone, on its own redis-server, for 20 minutes (`--minutes N`): 500 delayed jobs/s (`--rate`), each due 0.1–2 s after its add, 2 % failing their first attempt and 0.5 % every attempt (3 attempts, 200 ms fixed backoff), 3 worker processes at concurrency 16, and one SIGKILL of a worker per 5 minutes (`--kills`; never w0, whose RSS is followed from start to end), each replaced at once. Dead jobs are removed each minute, as an application would. It prints Redis `used_memory` and worker RSS at the start, every minute, at the end of the load and after the drain (delayq remembers the ids of completed jobs, by default 100,000 for at most 5 minutes, so `used_memory` rises by design until that set is full: 200 s at 500 jobs/s; flat means flat after that); then checks, from a ledger kept outside Redis (each worker appends its handler starts and ends, completions and deaths to its own file; the soak keeps the accepted ids and the kill times), that no accepted job was lost and none ran twice while its holder lived (a run that began before the previous one had failed or its process been killed). Exit 1 if either happened, if a job ended otherwise than its payload asked (dead instead of completed or the reverse), or if the queue did not drain within 120 s. `npm run soak -- --self-check` runs only the check, on hand-made histories that each hold a known fault.';

/** The Markdown page. */
export function markdownReport(
  results: RunResults,
  paths: { jsonPath: string; chartPath: string },
  /** Hand-written analysis (bench/analysis.md), placed after the targets so a run never erases it. */
  analysis = '',
): string {
  const e = results.environment;
  const p = results.profile;
  const out: string[] = [];
  out.push('# Benchmarks: delayq, BullMQ and bee-queue side by side\n');
  out.push(
    `The figures of one run: \`${results.command}\` on ${results.date.slice(0, 10)} (${results.totalSeconds} s), on the host and under the load given with the table below. Raw figures, every repetition: \`${paths.jsonPath}\`. Regenerate with \`npm run bench\`; \`npm run bench:quick\` is the small CI form (one repetition, small counts, writes no docs). Which bench script answers which question: bench/README.md. Earlier runs and their readings: docs/history/benchmarks-journal.md.\n`,
  );
  for (const [w, message] of Object.entries(results.errors)) {
    out.push(`**${w} failed in this run:** ${message}\n`);
  }
  out.push("## The current figures: issue 14's goals\n");
  out.push(
    'The table `npm run bench` ends with, also written to `bench/results/<date>-<commit>.md` so it can be pasted unchanged.\n',
  );
  out.push(goalsTable(results));
  const targets = targetTable(results);
  if (targets) {
    out.push("## Issue 5's other targets\n");
    out.push(targets);
  }
  if (analysis.trim()) out.push(`${analysis.trim()}\n`);
  out.push('## Machine and versions\n');
  out.push(`- Machine: ${e.nproc} CPUs (nproc), ${e.cpuModel}, ${e.memoryGiB} GiB memory`);
  out.push(
    `- ${Object.entries(e.versions)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}`,
  );
  out.push(
    `- Command: \`${results.command}\`; profile '${p.name}', ${p.reps} repetition(s) per figure unless a workload says otherwise; time per workload (s): ${Object.entries(
      results.secondsByWorkload,
    )
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}\n`,
  );
  const loads = Object.entries(results.loadAverage);
  const busiest = Math.max(...loads.map(([, v]) => v));
  out.push(
    `- 1-minute load average: ${loads.map(([k, v]) => `${k} ${v.toFixed(2)}`).join(', ')}${busiest > e.nproc ? ` — **the machine was busy with other work during this run (load above ${e.nproc}); treat the figures with care**` : ''}\n`,
  );
  out.push('## How it is measured\n');
  out.push(
    [
      "- Private redis-servers (no persistence), started by the bench on free ports: each W1 and W7 run, and each W4 and W6 case, has one of its own, so the INFO cpu and commandstats deltas hold that system's traffic alone; the other workloads share one, flushed between runs. Systems take turns within each repetition.",
      '- Every system sits behind one adapter (`bench/adapters/`: add, addBulk, start worker, close); workloads use only that. Workers run in their own process (`node --import tsx bench/processes/worker-process.ts`).',
      "- Settings: each library's defaults, except that finished jobs are not kept (BullMQ `removeOnComplete: true`, bee-queue `removeOnSuccess: true`; delayq keeps none by default), bee-queue workers have `activateDelayedJobs: true` (without it delayed jobs never run) and `getEvents: false` (nobody listens), and bee-queue's producer has `storeJobs: false` (with no events coming back, its map of created jobs would keep every job added).",
      "- **Lateness** for delayq is `job.claimedAt - job.runAt`, both by the Redis clock (the claim script reads `TIME`; for a job the worker claimed ahead of its due time, claimedAt is its handler's start by the worker's lower bound of that clock). BullMQ and bee-queue record no claim time, so theirs is the handler's `Date.now()` minus the intended due time (`Date.now()` at add + delay). Rows \"at handler start\" use that second method for delayq too. delayq counts a delay from its add call too (the time from the call to the send is measured locally and taken off the delay), so those rows compare the three on equal terms; issue 14's lateness goals use them.",
      '- Figures are medians over repetitions; small numbers in brackets are the lowest and highest repetition.',
    ].join('\n') + '\n',
  );
  for (const w of ['W1', 'W2', 'W3', 'W4', 'W5', 'W6', 'W7', 'W8', 'groups', 'batch']) {
    const table = figureTable(results, w);
    if (!table) continue;
    out.push(`## ${TITLES[w]}\n`);
    out.push(`${describeWorkload(p, w, results)}\n`);
    out.push(table);
    if (w === 'W8') out.push(w8StepTable(results));
    if (w === 'W3' && Object.keys(results.distributions).length > 0) {
      out.push(`![Lateness distributions of the last repetition of W2 and W3](${paths.chartPath})\n`);
    }
  }
  if (!results.figures.some((f) => f.workload === 'W8')) {
    out.push(`## ${TITLES['W8']}\n`);
    out.push(`${describeW8(p)}\n`);
    out.push('_Not measured in the run this page shows (it predates W8 or left it out)._\n');
  }
  out.push('## Soak (`npm run soak`, not part of `npm run bench`)\n');
  out.push(`${SOAK}\n`);
  if (results.ceilings.length > 0) {
    out.push("## Redis's own ceiling on this machine\n");
    out.push(
      '`redis-benchmark`, 50 clients, against the same kind of private server. One EVAL at the pipelined ceiling costs Redis about 1e6 / rate µs; compare with each system\'s "Redis CPU per processed job" in W1.\n',
    );
    out.push('| case | ops/s | µs per op at that rate |\n|---|---:|---:|');
    for (const c of results.ceilings)
      out.push(`| ${c.name} | ${fmt(c.opsPerSec, 'ops/s')} | ${fmt(1e6 / c.opsPerSec, 'µs')} |`);
    const commands = results.details['ceiling commands'];
    if (Array.isArray(commands))
      out.push(`\nCommands: ${commands.map((c) => `\`${String(c)}\``).join(', ')}\n`);
  }
  return `${out.join('\n').trimEnd()}\n`;
}

const COLORS: Record<SystemName, string> = { delayq: '#1b7f3b', bullmq: '#c0392b', 'bee-queue': '#d68910' };

/** An SVG with one panel per lateness distribution: percentile (y) against lateness (x, log scale). */
export function latenessChart(results: RunResults): string {
  const charts = Object.entries(results.distributions);
  const width = 460;
  const height = 300;
  const pad = { left: 50, right: 15, top: 30, bottom: 45 };
  const plotW = width - pad.left - pad.right;
  const plotH = height - pad.top - pad.bottom;
  const maxMs = 10_000;
  const x = (ms: number): number =>
    pad.left + (Math.log10(1 + Math.max(0, Math.min(ms, maxMs))) / Math.log10(1 + maxMs)) * plotW;
  const y = (pct: number): number => pad.top + plotH - (pct / 100) * plotH;
  const panels = charts.map(([name, bySystem], k) => {
    const parts: string[] = [`<g transform="translate(${k * width},0)">`];
    parts.push(
      `<text x="${pad.left}" y="18" font-size="13" font-weight="bold">${name} (percentile vs ms late)</text>`,
    );
    for (const tick of [0, 1, 10, 100, 1000, 10000]) {
      parts.push(
        `<line x1="${x(tick)}" x2="${x(tick)}" y1="${pad.top}" y2="${pad.top + plotH}" stroke="#ddd"/>`,
      );
      parts.push(
        `<text x="${x(tick)}" y="${pad.top + plotH + 15}" font-size="10" text-anchor="middle">${tick}</text>`,
      );
    }
    for (const pct of [0, 50, 90, 99, 100]) {
      parts.push(
        `<line x1="${pad.left}" x2="${pad.left + plotW}" y1="${y(pct)}" y2="${y(pct)}" stroke="#eee"/>`,
      );
      parts.push(
        `<text x="${pad.left - 5}" y="${y(pct) + 3}" font-size="10" text-anchor="end">p${pct}</text>`,
      );
    }
    parts.push(
      `<text x="${pad.left + plotW / 2}" y="${height - 8}" font-size="11" text-anchor="middle">lateness, ms (log scale)</text>`,
    );
    let legend = 0;
    for (const [system, curve] of Object.entries(bySystem) as Array<[SystemName, number[]]>) {
      const points = curve.map((ms, pct) => `${x(ms).toFixed(1)},${y(pct).toFixed(1)}`).join(' ');
      parts.push(`<polyline fill="none" stroke="${COLORS[system]}" stroke-width="2" points="${points}"/>`);
      parts.push(
        `<text x="${pad.left + 8}" y="${pad.top + 14 + legend * 14}" font-size="11" fill="${COLORS[system]}">${system}</text>`,
      );
      legend++;
    }
    parts.push('</g>');
    return parts.join('\n');
  });
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${Math.max(1, charts.length) * width}" height="${height}" font-family="sans-serif">\n<rect width="100%" height="100%" fill="white"/>\n${panels.join('\n')}\n</svg>\n`;
}
