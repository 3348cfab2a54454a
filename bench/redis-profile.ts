/**
 * Where Redis spends its time per job, W1-style: N immediate jobs added in bulk, then one worker
 * process at concurrency c runs them. For each phase, the INFO commandstats delta per command
 * (calls and µs per job; commands run inside scripts are counted as themselves too, so a script's
 * own row minus the rows of what it called is the script call's own overhead: argument passing,
 * the Lua interpreter, cjson) and the INFO cpu delta per job (everything Redis did, networking
 * included). Counts and µs per job depend far less on machine load than jobs/s do.
 *
 * Run: node --import tsx bench/redis-profile.ts [--system=delayq] [--jobs=50000] [--concurrency=50]
 *      [--cpu-prof] (the worker process writes a .cpuprofile to bench/results/prof; summarise it
 *      with bench/prof-summary.ts)
 */
import { mkdirSync } from 'node:fs';
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { SYSTEMS, type SystemName } from './adapters/adapter.js';
import { createAdapter } from './adapters/index.js';
import { profiling, startCountingWorker } from './lib/child.js';
import { chunks, freshQueue } from './lib/context.js';
import { cpuMicros, reset, startBenchRedis } from './lib/redis.js';
import type { Redis } from 'ioredis';
import { runMain } from './lib/main.js';

function option(name: string, fallback: string): string {
  const arg = process.argv.slice(2).find((a) => a.startsWith(`--${name}=`) || a === `--${name}`);
  if (arg === undefined) return fallback;
  return arg.includes('=') ? arg.slice(arg.indexOf('=') + 1) : 'yes';
}

interface Stat {
  calls: number;
  usec: number;
}

/** INFO commandstats: calls and usec per command so far. */
async function commandStats(control: Redis): Promise<Map<string, Stat>> {
  const stats = new Map<string, Stat>();
  for (const line of (await control.info('commandstats')).split('\r\n')) {
    const m = /^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/.exec(line);
    if (m) stats.set(m[1]!, { calls: Number(m[2]), usec: Number(m[3]) });
  }
  return stats;
}

/** The bench's own commands (INFO, CONFIG ...), left out of the table. */
const OWN = new Set(['info', 'config|resetstat', 'config|get', 'flushall', 'config', 'ping']);

function table(before: Map<string, Stat>, after: Map<string, Stat>, jobs: number, cpuUs: number): string {
  const rows: Array<[string, number, number]> = [];
  for (const [name, s] of after) {
    if (OWN.has(name)) continue;
    const calls = s.calls - (before.get(name)?.calls ?? 0);
    const usec = s.usec - (before.get(name)?.usec ?? 0);
    if (calls > 0) rows.push([name, calls / jobs, usec / jobs]);
  }
  rows.sort((a, b) => b[2] - a[2]);
  const scripts = rows.filter(([n]) => n === 'evalsha' || n === 'eval' || n.startsWith('fcall'));
  const inner = rows.filter(([n]) => !scripts.some(([s]) => s === n));
  const sum = (r: Array<[string, number, number]>, i: 1 | 2): number => r.reduce((t, x) => t + x[i], 0);
  const lines = [
    '| command | calls per job | µs per job | µs per call |',
    '| --- | ---: | ---: | ---: |',
    ...rows.map(
      ([n, c, u]) => `| ${n} | ${c.toFixed(2)} | ${u.toFixed(2)} | ${c > 0 ? (u / c).toFixed(2) : '–'} |`,
    ),
    `| commands inside or outside scripts, scripts left out | ${sum(inner, 1).toFixed(2)} | ${sum(inner, 2).toFixed(2)} | |`,
    `| script calls' own time (script rows minus the commands they ran) | | ${(sum(scripts, 2) - sum(inner, 2)).toFixed(2)} | |`,
    `| Redis CPU (INFO cpu, user + sys) | | ${(cpuUs / jobs).toFixed(2)} | |`,
  ];
  return lines.join('\n');
}

async function main(): Promise<void> {
  const system = option('system', 'delayq') as SystemName;
  if (!SYSTEMS.includes(system)) throw new Error(`--system: one of ${SYSTEMS.join(', ')}`);
  const jobs = Number(option('jobs', '50000'));
  const concurrency = Number(option('concurrency', '50'));
  if (option('cpu-prof', '') !== '') {
    profiling.dir = fileURLToPath(new URL('results/prof', import.meta.url));
    mkdirSync(profiling.dir, { recursive: true });
    profiling.systems.add(system);
  }
  const redis = await startBenchRedis();
  try {
    const { control, url } = redis;
    await reset(control);
    const queue = freshQueue('prof');
    const adapter = createAdapter(system, { url, queue });
    const s0 = await commandStats(control);
    const c0 = await cpuMicros(control);
    const addStart = performance.now();
    for (const range of chunks(
      Array.from({ length: jobs }, (_, i) => i),
      1_000,
    )) {
      const now = Date.now();
      await adapter.addBulk(range.map((i) => ({ payload: { i, due: now }, delayMs: 0 })));
    }
    const addRate = Math.round((jobs / (performance.now() - addStart)) * 1000);
    const s1 = await commandStats(control);
    const c1 = await cpuMicros(control);
    const child = await startCountingWorker({ system, url, queue, concurrency, expect: jobs });
    const done = await child.next('done', 600_000);
    const s2 = await commandStats(control);
    const c2 = await cpuMicros(control);
    await child.close();
    await adapter.close();
    const load = loadavg().map((l) => l.toFixed(2));
    console.log(`${system}, ${jobs} jobs, concurrency ${concurrency}; load average ${load.join(' ')}`);
    console.log(`\nAdd (addBulk in chunks of 1000, ${addRate} jobs/s):\n\n${table(s0, s1, jobs, c1 - c0)}`);
    console.log(
      `\nProcessing (${Math.round((done.completed / done.elapsedMs) * 1000)} jobs/s):\n\n${table(s1, s2, jobs, c2 - c1)}`,
    );
  } finally {
    await redis.stop();
  }
}

runMain(main);
