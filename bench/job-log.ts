/**
 * What job.log costs: --jobs jobs (default 5,000) run by one worker (concurrency 20) whose handler
 * writes 0, 1, 5 or 20 lines of 40 bytes, each count on a fresh queue: Redis commands and Redis
 * CPU per job (INFO commandstats and INFO cpu), log.lua calls and their mean time (commandstats of
 * FCALL/EVALSHA are per script, so log.lua's own figures come from SLOWLOG), and the memory the
 * lines keep (MEMORY USAGE of the lg hash) per job. 0 lines is what a queue that does not log
 * pays: no log.lua call and no lg key, the same commands as before job.log existed (claim.lua and
 * add.lua are unchanged by it). CPU figures move with the machine's load; the command counts do not.
 *
 * Run: npm run bench:job-log -- [--jobs=5000]
 */
import { Queue, Worker } from '../src/index.js';
import { queueKeys } from '../src/redis/keys.js';
import { script } from '../src/redis/scripts.js';
import { countFlag } from './lib/flags.js';
import { runMain } from './lib/main.js';
import { commandCalls, cpuMicros, startBenchRedis } from './lib/redis.js';

const JOBS = countFlag('jobs', 5_000);
const LINE = 'x'.repeat(30);
const { sha } = script('log');

async function main(): Promise<void> {
  const redis = await startBenchRedis();
  const { control } = redis;
  try {
    console.log(
      '| lines per job | Redis commands per job | Redis CPU µs per job | log.lua µs per call (SLOWLOG) | lg bytes per job |',
    );
    console.log('|--:|--:|--:|--:|--:|');
    for (const lines of [0, 1, 5, 20]) {
      const name = `job-log-${lines}`;
      const queue = new Queue<number>(name, { connection: redis.url });
      let done = 0;
      let finished = (): void => {};
      const all = new Promise<void>((resolve) => (finished = resolve));
      const worker = new Worker<number>(
        name,
        async (job) => {
          for (let i = 0; i < lines; i++) await job.log(`${LINE} ${i}`);
        },
        { connection: redis.url, concurrency: 20, keepCompleted: { count: JOBS, age: '1h' } },
      );
      worker.on('completed', () => {
        if (++done === JOBS) finished();
      });
      await worker.waitUntilReady();
      await control.config('RESETSTAT');
      await control.config('SET', 'slowlog-log-slower-than', '0');
      await control.config('SET', 'slowlog-max-len', '100000');
      await control.slowlog('RESET');
      const cpu0 = await cpuMicros(control);
      for (let i = 0; i < JOBS; i += 500) {
        await queue.addBulk(Array.from({ length: Math.min(500, JOBS - i) }, (_, k) => ({ payload: i + k })));
      }
      await all;
      const cpu = ((await cpuMicros(control)) - cpu0) / JOBS;
      const calls = [...(await commandCalls(control)).entries()]
        .filter(([command]) => !['config', 'slowlog', 'info'].includes(command))
        .reduce((sum, [, n]) => sum + n, 0);
      const log = (await control.slowlog('GET', 100_000)) as Array<[number, number, number, string[]]>;
      const logCalls = log.filter((e) => /_log$/.test(String(e[3][1])) || e[3][1] === sha);
      const perCall = logCalls.length ? logCalls.reduce((s, e) => s + e[2], 0) / logCalls.length : 0;
      const bytes = Number((await control.call('MEMORY', 'USAGE', queueKeys(name).logs)) ?? 0);
      console.log(
        `| ${lines} | ${(calls / JOBS).toFixed(2)} | ${cpu.toFixed(1)} | ${lines ? perCall.toFixed(1) : '–'} | ${(bytes / JOBS).toFixed(0)} |`,
      );
      await worker.close();
      await queue.close();
    }
  } finally {
    await redis.stop();
  }
}

runMain(main);
