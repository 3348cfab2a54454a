/**
 * queue.search on a queue of --jobs jobs (default 10⁶): how long a page takes, and how long one
 * search.lua call holds Redis (its SLOWLOG duration, the server's own time), for the searches a
 * user makes: the first page of everything, a time window, a group, a rare id prefix (every page
 * to the end: the worst case, every entry looked at) and a prefix within a window, finished jobs
 * newest first, and a page deep into a long search. Then what the alternative, an index of ids
 * kept in lexicographic order, would cost each job in memory.
 *
 * The queue: 80 % default class due over the next day (one in ten with an id `order:<n>`, the
 * rest generated), 10 % grouped over --groups groups, 10 % prioritized, plus 20,000 completed
 * and 10,000 cancelled. Wall-clock figures move with the machine's load; say so when you quote
 * them. The SLOWLOG durations are Redis's time in the script, which load moves less.
 *
 * Run: npm run bench:search -- [--jobs=1000000] [--groups=1000] [--repeat=5]
 */
import { randomInt } from 'node:crypto';
import { Queue, Worker, type SearchOptions } from '../src/index.js';
import { script } from '../src/redis/scripts.js';
import { countFlag } from './lib/flags.js';
import { runMain } from './lib/main.js';
import { cpuMicros, startBenchRedis, usedMemory } from './lib/redis.js';

const JOBS = countFlag('jobs', 1_000_000);
const GROUPS = countFlag('groups', 1_000);
const REPEAT = countFlag('repeat', 5);
const NAME = 'search-bench';
const { sha } = script('search');
const BULK = 1_000;
const HOUR = 3_600_000;

interface Figure {
  pages: number;
  jobs: number;
  wallMs: number;
  /** search.lua calls, the longest one and their sum, by SLOWLOG (µs). */
  calls: number;
  maxCallUs: number;
  sumCallUs: number;
  redisCpuMs: number;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

async function main(): Promise<void> {
  const redis = await startBenchRedis();
  const { control } = redis;
  const queue = new Queue<{ i: number }>(NAME, { connection: redis.url });
  try {
    const t0 = performance.now();
    const base = Date.now();
    for (let i = 0; i < JOBS; i += BULK) {
      const n = Math.min(BULK, JOBS - i);
      await queue.addBulk(
        Array.from({ length: n }, (_, k) => {
          const at = i + k;
          const runAt = base + 60_000 + randomInt(24 * HOUR);
          if (at % 10 === 8) {
            return { payload: { i: at }, opts: { runAt, group: `g-${Math.floor(at / 10) % GROUPS}` } };
          }
          if (at % 10 === 9) return { payload: { i: at }, opts: { runAt, priority: (at % 20) - 10 || 1 } };
          if (at % 10 === 0) return { payload: { i: at }, opts: { runAt, id: `order:${at}` } };
          return { payload: { i: at }, opts: { runAt } };
        }),
      );
    }
    // Finished jobs: 20,000 completed (kept), 10,000 cancelled.
    const worker = new Worker<{ i: number }>(NAME, async () => 'ok', {
      connection: redis.url,
      concurrency: 50,
      keepCompleted: { count: 100_000, age: '1d' },
    });
    let completed = 0;
    const allDone = new Promise<void>((resolve) =>
      worker.on('completed', () => {
        if (++completed === 20_000) resolve();
      }),
    );
    for (let i = 0; i < 20_000; i += BULK) {
      await queue.addBulk(
        Array.from({ length: BULK }, (_, k) => ({ payload: { i: -(i + k) }, opts: { id: `done:${i + k}` } })),
      );
    }
    await allDone;
    await worker.close();
    const cancelIds = await queue.addBulk(
      Array.from({ length: 10_000 }, (_, k) => ({
        payload: { i: k },
        opts: { id: `gone:${k}`, delay: '1d' },
      })),
    );
    await Promise.all(cancelIds.map(({ id }) => queue.cancel(id)));
    const counts = await queue.counts();
    console.log(
      `queue of ${(counts.scheduled + counts.completed + counts.cancelled).toLocaleString('en-US')} jobs ` +
        `(${counts.scheduled.toLocaleString('en-US')} scheduled, ${counts.completed} completed, ${counts.cancelled} cancelled), ` +
        `filled in ${((performance.now() - t0) / 1000).toFixed(0)} s`,
    );

    await control.config('SET', 'slowlog-log-slower-than', '0');
    await control.config('SET', 'slowlog-max-len', '100000');

    const measure = async (options: SearchOptions, maxPages: number): Promise<Figure> => {
      await control.slowlog('RESET');
      const cpu0 = await cpuMicros(control);
      const start = performance.now();
      let cursor: string | null = null;
      let pages = 0;
      let jobs = 0;
      do {
        const page: { jobs: unknown[]; cursor: string | null } = await queue.search({ ...options, cursor });
        jobs += page.jobs.length;
        cursor = page.cursor;
        pages++;
      } while (cursor !== null && pages < maxPages);
      const wallMs = performance.now() - start;
      const redisCpuMs = ((await cpuMicros(control)) - cpu0) / 1000;
      const log = (await control.slowlog('GET', 100_000)) as Array<[number, number, number, string[]]>;
      // FCALL delayq_<hash>_search, or EVALSHA of search.lua: the script's own time.
      const calls = log.filter((entry) => /_search$/.test(String(entry[3][1])) || entry[3][1] === sha);
      return {
        pages,
        jobs,
        wallMs,
        calls: calls.length,
        maxCallUs: Math.max(0, ...calls.map((e) => e[2])),
        sumCallUs: calls.reduce((sum, e) => sum + e[2], 0),
        redisCpuMs,
      };
    };

    const mid = base + 12 * HOUR;
    const cases: Array<[string, SearchOptions, number]> = [
      ['first page, no filter', { limit: 50 }, 1],
      [
        'scheduled, a 1-minute window, first page',
        { state: 'scheduled', from: mid, to: mid + 60_000, limit: 50 },
        1,
      ],
      ['one group, first page', { group: 'g-17', limit: 50 }, 1],
      ['completed, newest first, first page', { state: 'completed', limit: 50 }, 1],
      ['rare id prefix, every page to the end', { idPrefix: 'order:12345', limit: 50 }, 10_000],
      [
        'rare id prefix in a 1-hour window, to the end',
        { idPrefix: 'order:1', from: mid, to: mid + HOUR, limit: 50 },
        10_000,
      ],
      ['no filter, 20 pages of 50', { limit: 50 }, 20],
    ];
    console.log(
      '\n| search | pages | jobs | wall ms (median) | search.lua calls | longest call µs (SLOWLOG) | Redis µs in search.lua (SLOWLOG) | Redis CPU ms | Redis CPU µs per call |',
    );
    console.log('|---|--:|--:|--:|--:|--:|--:|--:|--:|');
    for (const [what, options, maxPages] of cases) {
      const runs: Figure[] = [];
      for (let r = 0; r < REPEAT; r++) runs.push(await measure(options, maxPages));
      const f = runs[Math.floor(runs.length / 2)]!;
      console.log(
        `| ${what} | ${f.pages} | ${f.jobs} | ${median(runs.map((x) => x.wallMs)).toFixed(1)} | ${f.calls} | ` +
          `${median(runs.map((x) => x.maxCallUs))} | ${median(runs.map((x) => x.sumCallUs))} | ${median(runs.map((x) => x.redisCpuMs)).toFixed(1)} | ` +
          `${((median(runs.map((x) => x.redisCpuMs)) * 1000) / Math.max(1, f.calls)).toFixed(0)} |`,
      );
    }

    // The alternative: every id also in a ZSET of score 0, searched by ZRANGEBYLEX.
    await control.config('SET', 'slowlog-log-slower-than', '10000');
    const before = await usedMemory(control);
    const index = 'dq:{search-bench-index}:ids';
    let cursor = '0';
    let indexed = 0;
    do {
      const [next, fields] = await control.hscan(`dq:{${NAME}}:j`, cursor, 'COUNT', 2_000);
      cursor = next;
      const args: Array<string | number> = [];
      for (let i = 0; i < fields.length; i += 2) args.push(0, fields[i]!);
      if (args.length > 0) indexed += await control.zadd(index, ...args);
    } while (cursor !== '0');
    const perId = (await usedMemory(control)) - before;
    const t1 = performance.now();
    const hits = await control.zrangebylex(index, '[order:12345', '(order:12345\xff', 'LIMIT', 0, 50);
    console.log(
      `\nA lexicographic index of the ${indexed.toLocaleString('en-US')} ids would take ${(perId / indexed).toFixed(1)} bytes per job ` +
        `(${(perId / 2 ** 20).toFixed(1)} MiB), kept by every add and every script that deletes a record; ` +
        `its prefix search: ${hits.length} ids in ${(performance.now() - t1).toFixed(2)} ms.`,
    );
    await control.del(index);
  } finally {
    await queue.close();
    await redis.stop();
  }
}

runMain(main);
