/**
 * The worker's own Node CPU per job, without Redis's or a producer's in the way: N immediate jobs
 * (~100 B payload) are added first, then one Worker in this process runs them with a no-op
 * handler. From the first handler call to the last it reports jobs/s, this process's CPU per job
 * (process.cpuUsage, user + system), GC time per 1,000 jobs (PerformanceObserver 'gc' entries)
 * and bytes allocated per job: heap used at the end minus at the start, plus what every GC freed
 * (v8.GCProfiler's before/after heap sizes), which is exact up to the last GC's rounding.
 *
 * Run: node --import tsx bench/worker-cpu.ts [--jobs=100000] [--concurrency=50] [--prefetch=N]
 *      [--profile=FILE]
 *      (at --concurrency=1, --jobs=20000 keeps it under a minute)
 * --profile writes a .cpuprofile of the processing phase alone (first handler call to last), for
 * bench/prof-summary.ts: a whole-process --cpu-prof is mostly start-up and the adds.
 */
import { loadavg } from 'node:os';
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { PerformanceObserver } from 'node:perf_hooks';
import { GCProfiler, getHeapStatistics } from 'node:v8';
import { Queue, Worker } from '../src/index.js';
import { countFlag } from './lib/flags.js';
import { commandCalls, cpuMicros, scriptCallsBetween, startBenchRedis } from './lib/redis.js';
import { runMain } from './lib/main.js';

const JOBS = countFlag('jobs', 100_000);
const CONCURRENCY = countFlag('concurrency', 50);
/** Jobs claimed beyond free slots (WorkerOptions.prefetch); the worker's default when not given. */
const PREFETCH = process.argv.find((a) => a.startsWith('--prefetch='))?.slice('--prefetch='.length);
const BULK = 1_000;
const QUEUE = 'worker-cpu';
const PROFILE = process.argv.find((a) => a.startsWith('--profile='))?.slice('--profile='.length);
const HEAP_PROFILE = process.argv
  .find((a) => a.startsWith('--heap-profile='))
  ?.slice('--heap-profile='.length);

/** What the processing phase cost, read at its last job. */
interface Phase {
  ms: number;
  cpuUs: number;
  gcMs: number;
  gcCount: number;
  allocated: number;
}

/** GC pauses since construction, by PerformanceObserver (the observer's own cost is per GC, not per job). */
class GcTime {
  ms = 0;
  count = 0;
  private readonly observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      this.ms += entry.duration;
      this.count++;
    }
  });

  constructor() {
    this.observer.observe({ entryTypes: ['gc'] });
  }

  stop(): void {
    this.observer.disconnect();
  }
}

async function main(): Promise<void> {
  const redis = await startBenchRedis();
  const queue = new Queue<{ i: number; pad: string }>(QUEUE, { connection: redis.url });
  try {
    const pad = 'x'.repeat(80);
    for (let i = 0; i < JOBS; i += BULK) {
      const n = Math.min(BULK, JOBS - i);
      await queue.addBulk(Array.from({ length: n }, (_, k) => ({ payload: { i: i + k, pad } })));
    }
    let done = 0;
    let startedAt = 0;
    let cpu0: NodeJS.CpuUsage | undefined;
    let gc: GcTime | undefined;
    let profiler: GCProfiler | undefined;
    let used0 = 0;
    let finish: (phase: Phase) => void = () => {};
    const finished = new Promise<Phase>((resolve) => (finish = resolve));
    const handler = async (): Promise<void> => {
      done++;
      if (done === 1) {
        gc = new GcTime();
        profiler = new GCProfiler();
        profiler.start();
        used0 = getHeapStatistics().used_heap_size;
        startedAt = performance.now();
        cpu0 = process.cpuUsage();
      } else if (done === JOBS) {
        const cpu = process.cpuUsage(cpu0);
        const ms = performance.now() - startedAt;
        const used1 = getHeapStatistics().used_heap_size;
        const stats = profiler!.stop().statistics;
        const freed = stats.reduce(
          (sum, s) => sum + s.beforeGC.heapStatistics.usedHeapSize - s.afterGC.heapStatistics.usedHeapSize,
          0,
        );
        gc!.stop();
        finish({
          ms,
          cpuUs: cpu.user + cpu.system,
          gcMs: gc!.ms,
          gcCount: gc!.count,
          allocated: used1 - used0 + freed,
        });
      }
    };
    const session = PROFILE || HEAP_PROFILE ? new Session() : undefined;
    if (session) session.connect();
    if (session && PROFILE) {
      await session.post('Profiler.enable');
      await session.post('Profiler.start');
    }
    if (session && HEAP_PROFILE) {
      await session.post('HeapProfiler.enable');
      // Every allocation sampled, not only what is still alive at the end: what the GC collects
      // is what this profile is for.
      await session.post('HeapProfiler.startSampling', {
        samplingInterval: 1024,
        includeObjectsCollectedByMajorGC: true,
        includeObjectsCollectedByMinorGC: true,
      });
    }
    // Redis's side of the same run (worker start and close included): CPU and script calls.
    const redisCpu0 = await cpuMicros(redis.control);
    const calls0 = await commandCalls(redis.control);
    const worker = new Worker<{ i: number; pad: string }>(QUEUE, handler, {
      connection: redis.url,
      concurrency: CONCURRENCY,
      ...(PREFETCH !== undefined && { prefetch: Number(PREFETCH) }),
    });
    const p = await finished;
    if (session && PROFILE) {
      const { profile } = await session.post('Profiler.stop');
      writeFileSync(PROFILE, JSON.stringify(profile));
    }
    if (session && HEAP_PROFILE) {
      const { profile } = await session.post('HeapProfiler.stopSampling');
      writeFileSync(HEAP_PROFILE, JSON.stringify(profile));
    }
    session?.disconnect();
    await worker.close();
    const redisCpu = (await cpuMicros(redis.control)) - redisCpu0;
    const scriptCalls = scriptCallsBetween(calls0, await commandCalls(redis.control));
    // The first job starts the clock: the figures cover JOBS - 1 jobs.
    const jobs = JOBS - 1;
    console.log(
      [
        `worker-cpu: ${JOBS} jobs at concurrency ${CONCURRENCY}`,
        `${Math.round((jobs * 1000) / p.ms)} jobs/s`,
        `CPU ${(p.cpuUs / jobs).toFixed(2)} µs/job`,
        `GC ${((p.gcMs * 1000) / jobs).toFixed(1)} ms/1k jobs (${p.gcCount} GCs, ${((p.gcMs * 1000 * 100) / p.cpuUs).toFixed(1)} % of CPU)`,
        `allocated ${(p.allocated / jobs / 1024).toFixed(2)} KB/job`,
        `Redis CPU ${(redisCpu / JOBS).toFixed(2)} µs/job, ${(JOBS / scriptCalls).toFixed(1)} jobs per script call`,
        `load ${loadavg()[0]!.toFixed(2)}`,
      ].join('; '),
    );
  } finally {
    await queue.close();
    await redis.stop();
  }
}

runMain(main);
