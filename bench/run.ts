/**
 * The benchmark runner: `npm run bench` (full, writes docs/benchmarks.md) or `npm run bench:quick`
 * (small counts, one repetition; writes bench/results/last-run.tmp.json and prints the tables).
 * Either ends with issue 14's goals table (bench/lib/goals.ts), also written to
 * bench/results/<date>-<commit>.md (a quick or partial run: <date>-<commit>-quick.tmp.md or
 * -partial.tmp.md, ignored by git).
 *
 * Flags: --quick, --only=W1,W2,...,ceiling,groups,batch, --systems=delayq,bullmq,bee-queue,
 * --cpu-prof=delayq (worker processes of those systems write .cpuprofile files to bench/results/prof),
 * --reps=N (repetitions instead of the profile's, W7's one included), --write-docs (also write the docs for a partial run),
 * --render=bench/results/latest.json (only re-render the docs from a saved results file),
 * --w7-max=1e7 (W7 also at every power of ten above the profile's sizes up to this many waiting),
 * --w8-steps=500,1000,... (W8's arrival rates, jobs/s), --w8-seconds=N (W8's length of a step).
 * A flag's value may also follow it as the next argument (`--only W8`).
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { format } from 'prettier';
import { SYSTEMS, type SystemName } from './adapters/adapter.js';
import { profiling } from './lib/child.js';
import type { Context } from './lib/context.js';
import { describeEnvironment } from './lib/machine.js';
import { FULL, QUICK, type Profile } from './lib/profile.js';
import { Recorder } from './lib/recorder.js';
import { startBenchRedis } from './lib/redis.js';
import { goalsTable } from './lib/goals.js';
import { latenessChart, markdownReport } from './lib/report.js';
import type { RunResults } from './lib/results.js';
import { runCeiling } from './workloads/ceiling.js';
import { runW1 } from './workloads/w1-throughput.js';
import { runW2, runW3 } from './workloads/w2-w3-lateness.js';
import { runW4 } from './workloads/w4-idle.js';
import { runW5 } from './workloads/w5-memory.js';
import { runW6 } from './workloads/w6-recovery.js';
import { runW7, w7Sizes } from './workloads/w7-scale.js';
import { runW8 } from './workloads/w8-capacity.js';
import { runGroups } from './workloads/groups.js';
import { runBatchThroughput } from './workloads/batch-throughput.js';
import { runMain } from './lib/main.js';

const WORKLOADS: Record<string, (ctx: Context) => Promise<void>> = {
  W1: runW1,
  W2: runW2,
  W3: runW3,
  W4: runW4,
  W5: runW5,
  W6: runW6,
  W7: runW7,
  W8: runW8,
  ceiling: runCeiling,
  groups: runGroups,
  batch: runBatchThroughput,
};

/** Flags that take a value, given as `--name=value` or `--name value`; the others are switches. */
const VALUED = new Set(['only', 'systems', 'cpu-prof', 'reps', 'render', 'w7-max', 'w8-steps', 'w8-seconds']);

function flag(name: string): string | undefined {
  const args = process.argv.slice(2);
  const at = args.findIndex((a) => a === `--${name}` || a.startsWith(`--${name}=`));
  if (at < 0) return undefined;
  const arg = args[at]!;
  if (arg.includes('=')) return arg.slice(arg.indexOf('=') + 1);
  const next = args[at + 1];
  return VALUED.has(name) && next !== undefined && !next.startsWith('--') ? next : '';
}

function list(value: string | undefined, known: readonly string[], name: string): string[] | undefined {
  if (value === undefined) return undefined;
  const items = value.split(',').filter(Boolean);
  for (const item of items) {
    if (!known.includes(item)) throw new Error(`--${name}: unknown '${item}'; known: ${known.join(', ')}`);
  }
  return items;
}

const root = (path: string): string => fileURLToPath(new URL(`../${path}`, import.meta.url));

/** The hand-written "where the time and bytes go" section; kept in its own file so a run re-inserts it. */
const analysis = (): string => readFileSync(root('bench/analysis.md'), 'utf8');

/** The page as the repository's Prettier settings would write it, so `npm run lint` stays clean. */
async function formatted(markdown: string): Promise<string> {
  return format(markdown, { parser: 'markdown', singleQuote: true, printWidth: 110 });
}

/**
 * Print the goals table and write it where it can be pasted from: bench/results/<date>-<commit>.md
 * for a full run (kept in git); a quick or partial run's file ends in .tmp.md (ignored), since its
 * figures are no result.
 */
async function writeGoals(results: RunResults, partial: boolean): Promise<void> {
  const commit = `${results.environment.commit ?? 'unknown'}${results.environment.dirty ? '-dirty' : ''}`;
  const kind = results.profile.name === 'quick' ? '-quick.tmp' : partial ? '-partial.tmp' : '';
  const path = `bench/results/${results.date.slice(0, 10)}-${commit}${kind}.md`;
  const table = await formatted(goalsTable(results));
  writeFileSync(root(path), `# Issue 14 goals\n\n${table}`);
  console.log(`\nIssue 14 goals (also in ${path}):\n\n${table}`);
}

/** A positive number from a flag, in plain or exponent form (1e7). */
function positive(name: string, value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`--${name} must be a number > 0, got '${value}'`);
  return n;
}

/** The profile with the sizes the W7 and W8 flags ask for. */
function sized(profile: Profile): Profile {
  const w7Max = flag('w7-max');
  const steps = flag('w8-steps');
  const seconds = flag('w8-seconds');
  return {
    ...profile,
    w7: {
      ...profile.w7,
      ...(w7Max !== undefined && { waiting: w7Sizes(profile.w7.waiting, positive('w7-max', w7Max)) }),
    },
    w8: {
      ...profile.w8,
      ...(steps !== undefined && {
        rates: steps
          .split(',')
          .filter(Boolean)
          .map((r) => positive('w8-steps', r)),
      }),
      ...(seconds !== undefined && { stepMs: positive('w8-seconds', seconds) * 1000 }),
    },
  };
}

async function main(): Promise<void> {
  const known = new Set([
    'quick',
    'only',
    'systems',
    'cpu-prof',
    'write-docs',
    'reps',
    'render',
    'w7-max',
    'w8-steps',
    'w8-seconds',
  ]);
  const args = process.argv.slice(2);
  args.forEach((arg, i) => {
    const name = arg.replace(/^--/, '').split('=')[0]!;
    const previous = args[i - 1];
    // The value of a `--name value` pair.
    if (!arg.startsWith('--') && previous !== undefined && !previous.includes('=')) {
      if (VALUED.has(previous.replace(/^--/, ''))) return;
    }
    if (!arg.startsWith('--') || !known.has(name))
      throw new Error(`unknown argument ${arg}; known: --${[...known].join(', --')}`);
  });
  const render = flag('render');
  if (render !== undefined) {
    // Re-render the docs from a saved results file, without measuring anything.
    const saved = JSON.parse(readFileSync(root(render), 'utf8')) as RunResults;
    // JSON has no Infinity: W6 records "never recovered within the cap" as Infinity, saved as null.
    for (const f of saved.figures) {
      if (f.workload !== 'W6') continue;
      f.values = f.values.map((v) => v ?? Infinity);
      f.median = f.median ?? Infinity;
    }
    writeFileSync(
      root('docs/benchmarks.md'),
      await formatted(
        markdownReport(saved, { jsonPath: render, chartPath: 'benchmarks-lateness.svg' }, analysis()),
      ),
    );
    writeFileSync(root('docs/benchmarks-lateness.svg'), latenessChart(saved));
    console.log(`rendered docs/benchmarks.md and docs/benchmarks-lateness.svg from ${render}`);
    console.log(`\n${await formatted(goalsTable(saved))}`);
    return;
  }
  const base = flag('quick') !== undefined ? QUICK : FULL;
  const reps = flag('reps');
  if (reps !== undefined && !/^[1-9]\d*$/.test(reps))
    throw new Error(`--reps must be a whole number >= 1, got '${reps}'`);
  // W7 has a repetition count of its own (one: it is the longest); --reps sets it too.
  const profile = sized({
    ...base,
    ...(reps !== undefined && { reps: Number(reps), w7: { ...base.w7, reps: Number(reps) } }),
  });
  const only = list(flag('only'), Object.keys(WORKLOADS), 'only') ?? Object.keys(WORKLOADS);
  const systems = (list(flag('systems'), SYSTEMS, 'systems') ?? SYSTEMS) as SystemName[];
  const profiled = list(flag('cpu-prof'), SYSTEMS, 'cpu-prof') ?? [];
  if (profiled.length > 0) {
    profiling.dir = root('bench/results/prof');
    mkdirSync(profiling.dir, { recursive: true });
    for (const s of profiled) profiling.systems.add(s);
  }
  // A W7 that reaches further is still a full run; fewer sizes or other W8 steps are not.
  const resized =
    base.w7.waiting.some((n) => !profile.w7.waiting.includes(n)) ||
    flag('w8-steps') !== undefined ||
    flag('w8-seconds') !== undefined;
  const partial =
    only.length !== Object.keys(WORKLOADS).length ||
    systems.length !== SYSTEMS.length ||
    reps !== undefined ||
    resized;
  const writeDocs = (profile.name === 'full' && !partial) || flag('write-docs') !== undefined;
  const command =
    process.env['npm_lifecycle_event'] !== undefined && process.argv.length === 2
      ? `npm run ${process.env['npm_lifecycle_event']}`
      : `node --import tsx bench/run.ts ${process.argv.slice(2).join(' ')}`.trim();

  const log = (line: string): void => console.log(line);
  const errors: Record<string, string> = {};
  const rec = new Recorder();
  const redis = await startBenchRedis();
  const started = performance.now();
  mkdirSync(root('bench/results'), { recursive: true });
  const jsonPath =
    profile.name === 'quick' || partial ? 'bench/results/last-run.tmp.json' : 'bench/results/latest.json';
  const snapshot = (): RunResults => ({
    date: new Date().toISOString(),
    command,
    profile,
    environment: describeEnvironment(),
    systems,
    workloads: only,
    secondsByWorkload: timings,
    loadAverage: { ...loads, end: loadavg()[0]! },
    loadAverages: { start: loadsAtStart, end: loadavg() },
    totalSeconds: Math.round((performance.now() - started) / 100) / 10,
    errors,
    figures: rec.figures,
    ceilings: rec.ceilings,
    distributions: rec.distributions,
    details: rec.details,
  });
  const timings: Record<string, number> = {};
  // Other work on the machine skews every figure: the load is recorded next to them.
  const loadsAtStart = loadavg();
  const loads: Record<string, number> = { start: loadsAtStart[0]! };
  try {
    const ctx: Context = { redis, profile, systems, rec, log };
    log(
      `delayq bench (${profile.name}): ${only.join(', ')} for ${systems.join(', ')}; Redis on ${redis.url}`,
    );
    const env = describeEnvironment();
    log(
      `commit ${env.commit ?? 'unknown'}${env.dirty ? ' (uncommitted changes in src/)' : ''}, ` +
        `redis-server ${env.versions['redis-server']}, ${env.nproc} cores; load average (1 / 5 / 15 min) ` +
        loadsAtStart.map((l) => l.toFixed(2)).join(' / '),
    );
    for (const name of only) {
      const t = performance.now();
      loads[name] = loadavg()[0]!;
      log(`${name}... (load average ${loads[name].toFixed(2)})`);
      try {
        await WORKLOADS[name]!(ctx);
      } catch (err) {
        // One failed workload must not throw away the others: it is reported in the results and the doc.
        errors[name] = err instanceof Error ? err.message : String(err);
        log(`${name} FAILED: ${errors[name]}`);
      }
      timings[name] = Math.round((performance.now() - t) / 100) / 10;
      log(`${name} took ${timings[name]} s`);
      // Written after every workload, so an interrupted run keeps what it measured.
      writeFileSync(root(jsonPath), `${JSON.stringify(snapshot(), null, 2)}\n`);
    }
  } finally {
    await redis.stop();
  }
  const results = snapshot();
  writeFileSync(root(jsonPath), `${JSON.stringify(results, null, 2)}\n`);
  const markdown = markdownReport(
    results,
    { jsonPath, chartPath: 'benchmarks-lateness.svg' },
    writeDocs ? analysis() : '',
  );
  if (writeDocs) {
    mkdirSync(root('docs'), { recursive: true });
    writeFileSync(root('docs/benchmarks.md'), await formatted(markdown));
    writeFileSync(root('docs/benchmarks-lateness.svg'), latenessChart(results));
    log(`wrote ${jsonPath}, docs/benchmarks.md and docs/benchmarks-lateness.svg`);
  } else {
    log(markdown);
    log(
      `wrote ${jsonPath} (docs/ left alone: ${profile.name === 'quick' ? 'quick run' : 'partial run'}; --write-docs forces it)`,
    );
  }
  log(`total ${results.totalSeconds} s`);
  // Last, so the run ends with the one table issue 14 asks for.
  await writeGoals(results, partial);
  if (Object.keys(errors).length > 0) throw new Error(`failed workloads: ${Object.keys(errors).join(', ')}`);
}

runMain(main);
