/**
 * A worker process for the crash scenario under Bun or Deno, on the built package (DELAYQ_ROOT).
 * MODE=hang: prints `claimed <id>` for each job and never finishes it (the test kills the process).
 * MODE=finish: prints `completed <id> attempt <n>` once a job is done. Prints a ready line once it
 * claims, and closes gracefully on SIGTERM.
 */
import process from 'node:process';

type Delayq = typeof import('../../src/index.js');

const root = process.env['DELAYQ_ROOT'] ?? '../../src/';
const { Worker } = (await import(`${root}index.js`)) as Delayq;
const hang = process.env['MODE'] === 'hang';
const worker = new Worker<unknown>(
  process.env['QUEUE'] ?? 'runtimes-crash',
  async (job) => {
    if (hang) {
      console.log(`claimed ${job.id}`);
      await new Promise(() => {});
    }
    return job.attempt;
  },
  {
    connection: process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379',
    // A short lease, so the job of a killed worker is reaped back within a second or two.
    leaseMs: 1_000,
    reapIntervalMs: 200,
  },
);
worker.on('completed', (job) => console.log(`completed ${job.id} attempt ${job.attempt}`));
worker.on('error', (err) => console.error(`worker error: ${err.message}`));
process.once('SIGTERM', () => {
  void worker.close({ timeoutMs: 2_000 }).finally(() => process.exit(0));
});
await worker.waitUntilReady();
console.log(`ready ${JSON.stringify({ pid: process.pid, workerId: worker.id })}`);
