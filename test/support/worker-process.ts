/**
 * A delayq Worker in its own process, for tests that kill, stop or skew real workers. Run with
 * `node --import tsx test/support/worker-process.ts '<json config>'` (see WorkerProcessConfig in
 * processes.ts, which spawns it). Every handler run and every refused result is appended to a
 * ledger file, one JSON line per event, synchronously: a SIGKILL loses nothing already written.
 *
 * Prints `ready {"pid":..,"workerId":..}` once the worker claims, so the parent knows when to go on
 * and which pid to signal (the node pid, not a wrapper such as faketime). On SIGTERM or SIGINT it
 * closes the worker gracefully and exits 0.
 */
import { appendFileSync } from 'node:fs';
import { Worker } from '../../src/index.js';
import type { ChildConfig, LedgerEntry } from './processes.js';

function readConfig(): ChildConfig {
  const raw = process.argv[2] ?? process.env['DELAYQ_WORKER_CONFIG'];
  if (raw === undefined)
    throw new Error('worker-process: pass the config as JSON in argv[2] or DELAYQ_WORKER_CONFIG');
  const config = JSON.parse(raw) as Partial<ChildConfig>;
  for (const key of ['url', 'queue', 'ledger'] as const) {
    if (typeof config[key] !== 'string') throw new Error(`worker-process: config.${key} must be a string`);
  }
  return {
    url: config.url!,
    queue: config.queue!,
    ledger: config.ledger!,
    concurrency: config.concurrency ?? 1,
    leaseMs: config.leaseMs ?? 15_000,
    sleepMs: config.sleepMs ?? 0,
    ...(config.workerId !== undefined && { workerId: config.workerId }),
    ...(config.maxSleepMs !== undefined && { maxSleepMs: config.maxSleepMs }),
    ...(config.reapIntervalMs !== undefined && { reapIntervalMs: config.reapIntervalMs }),
    ...(config.limit !== undefined && { limit: config.limit }),
    ...(config.groups !== undefined && { groups: config.groups }),
    ...(config.partitions !== undefined && { partitions: config.partitions }),
  };
}

const config = readConfig();

function record(entry: LedgerEntry): void {
  appendFileSync(config.ledger, `${JSON.stringify(entry)}\n`);
}

const worker = new Worker<unknown>(
  config.queue,
  async (job) => {
    const start = Date.now();
    record({
      phase: 'start',
      id: job.id,
      attempt: job.attempt,
      pid: process.pid,
      start,
      runAt: job.runAt.getTime(),
      claimedAt: job.claimedAt.getTime(),
      ...(job.group !== undefined && { group: job.group }),
    });
    // A plain sleep that ignores job.signal on purpose: a handler that runs on after losing its
    // lease is the case fencing must handle (its late ack has to be refused).
    if (config.sleepMs > 0) await new Promise((resolve) => setTimeout(resolve, config.sleepMs));
    record({
      phase: 'end',
      id: job.id,
      attempt: job.attempt,
      pid: process.pid,
      start,
      end: Date.now(),
      ...(job.group !== undefined && { group: job.group }),
    });
  },
  {
    connection: config.url,
    concurrency: config.concurrency,
    leaseMs: config.leaseMs,
    ...(config.workerId !== undefined && { workerId: config.workerId }),
    ...(config.maxSleepMs !== undefined && { maxSleepMs: config.maxSleepMs }),
    ...(config.reapIntervalMs !== undefined && { reapIntervalMs: config.reapIntervalMs }),
    ...(config.limit !== undefined && { limit: config.limit }),
    ...(config.groups !== undefined && { groups: config.groups }),
    ...(config.partitions !== undefined && { partitions: config.partitions }),
  },
);

worker.on('completed', (job) => {
  record({ phase: 'completed', id: job.id, attempt: job.attempt, pid: process.pid, at: Date.now() });
});
worker.on('failed', (job, err) => {
  record({
    phase: 'failed',
    id: job.id,
    attempt: job.attempt,
    pid: process.pid,
    message: err.message,
    at: Date.now(),
  });
});
worker.on('dead', (job, err, id) => {
  record({
    phase: 'dead',
    id,
    attempt: job?.attempt ?? null,
    pid: process.pid,
    message: err.message,
    at: Date.now(),
  });
});
worker.on('error', (err) => {
  const { code, jobId } = err as Error & { code?: unknown; jobId?: unknown };
  record({
    phase: 'error',
    code: typeof code === 'string' ? code : null,
    id: typeof jobId === 'string' ? jobId : null,
    pid: process.pid,
    message: err.message,
    at: Date.now(),
  });
});

let closing = false;
function shutDown(): void {
  if (closing) return;
  closing = true;
  worker.close({ timeoutMs: 5_000 }).then(
    () => process.exit(0),
    (err: unknown) => {
      console.error('worker-process: close failed', err);
      process.exit(1);
    },
  );
}
process.on('SIGTERM', shutDown);
process.on('SIGINT', shutDown);

try {
  await worker.waitUntilReady();
} catch (err) {
  console.error('worker-process: the worker did not start', err);
  process.exit(1);
}
process.stdout.write(`ready ${JSON.stringify({ pid: process.pid, workerId: worker.id })}\n`);
