/**
 * A producer and a worker in one Bun or Deno process, on the built package (DELAYQ_ROOT): jobs due
 * over the next 300 ms, some failing their first attempt (retried), one failing every attempt
 * (dead). Checks that none started before its due time by the Redis clock and that every job ended
 * where it should, then prints `result {...}` and exits 0; any failure exits 1.
 */
import process from 'node:process';

type Delayq = typeof import('../../src/index.js');

const root = process.env['DELAYQ_ROOT'] ?? '../../src/';
const { Queue, Worker } = (await import(`${root}index.js`)) as Delayq;
const connection = process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379';
const name = process.env['QUEUE'] ?? 'runtimes-roundtrip';
const JOBS = 30;

interface Task {
  n: number;
  fate: 'ok' | 'flaky' | 'doomed';
}

const queue = new Queue<Task>(name, { connection });
const started = new Map<string, { attempt: number; early: boolean }[]>();
const worker = new Worker<Task>(
  name,
  async (job) => {
    const runs = started.get(job.id) ?? [];
    runs.push({ attempt: job.attempt, early: job.claimedAt.getTime() < job.runAt.getTime() });
    started.set(job.id, runs);
    if (job.payload.fate === 'doomed' || (job.payload.fate === 'flaky' && job.attempt === 1)) {
      throw new Error(`${job.payload.fate} job ${job.payload.n}`);
    }
    return job.payload.n;
  },
  { connection, concurrency: 4, backoff: () => 20 },
);
let completed = 0;
let dead = 0;
worker.on('completed', () => completed++);
worker.on('dead', () => dead++);
worker.on('error', (err) => console.error(`worker error: ${err.message}`));

try {
  await worker.waitUntilReady();
  await queue.addBulk(
    Array.from({ length: JOBS }, (_, n) => ({
      payload: {
        n,
        fate: n === 7 ? ('doomed' as const) : n % 5 === 0 ? ('flaky' as const) : ('ok' as const),
      },
      opts: { id: `job-${n}`, delay: (n * 10) % 300, attempts: n === 7 ? 2 : 3 },
    })),
  );
  const deadline = Date.now() + 20_000;
  while (completed + dead < JOBS) {
    if (Date.now() > deadline)
      throw new Error(`only ${completed} completed and ${dead} dead of ${JOBS} in 20 s`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const early = [...started.entries()].filter(([, runs]) => runs.some((r) => r.early)).map(([id]) => id);
  const retried = [...started.values()].filter((runs) => runs.length > 1).length;
  const counts = await queue.counts();
  const problems: string[] = [];
  if (early.length > 0) problems.push(`started early: ${early.join(', ')}`);
  if (completed !== JOBS - 1 || dead !== 1) problems.push(`completed ${completed}, dead ${dead}`);
  // Jobs 0, 5, 10, 15, 20, 25 fail once; job 7 fails both of its attempts.
  if (retried !== 7) problems.push(`${retried} jobs ran more than once, expected 7`);
  if (counts.dead !== 1 || counts.scheduled !== 0 || counts.active !== 0) {
    problems.push(`counts ${JSON.stringify(counts)}`);
  }
  console.log(
    `result ${JSON.stringify({ jobs: JOBS, completed, dead, retried, early: early.length, counts })}`,
  );
  if (problems.length > 0) throw new Error(problems.join('; '));
} catch (err) {
  console.error(`roundtrip failed: ${err instanceof Error ? err.message : String(err)}`);
  process.exitCode = 1;
} finally {
  await worker.close();
  await queue.close();
}
