/**
 * A batch Worker in its own process, for the SIGKILL test of batches: run with
 * `node --import tsx test/support/batch-worker-process.ts '<json config>'`. Each batch the handler
 * gets is appended to the ledger (one JSON line, synchronously, so a SIGKILL loses nothing already
 * written), and the handler then never returns: the process is there to be killed mid-batch.
 * Prints `ready {"pid":..,"workerId":..}` once the worker claims.
 */
import { appendFileSync } from 'node:fs';
import { Worker } from '../../src/index.js';

/** What the process reads from argv[2]. */
export interface BatchChildConfig {
  url: string;
  queue: string;
  ledger: string;
  size: number;
  waitMs: number;
  leaseMs: number;
}

/** One ledger line: a batch the handler got. */
export interface BatchLedgerEntry {
  pid: number;
  jobs: Array<{ id: string; attempt: number }>;
}

const config = JSON.parse(process.argv[2] ?? '{}') as BatchChildConfig;
const worker = new Worker<unknown>(
  config.queue,
  async (jobs) => {
    const entry: BatchLedgerEntry = {
      pid: process.pid,
      jobs: jobs.map((j) => ({ id: j.id, attempt: j.attempt })),
    };
    appendFileSync(config.ledger, `${JSON.stringify(entry)}\n`);
    await new Promise(() => {});
  },
  {
    connection: config.url,
    leaseMs: config.leaseMs,
    batch: { size: config.size, waitMs: config.waitMs },
  },
);
try {
  await worker.waitUntilReady();
} catch (err) {
  console.error('batch-worker-process: the worker did not start', err);
  process.exit(1);
}
process.stdout.write(`ready ${JSON.stringify({ pid: process.pid, workerId: worker.id })}\n`);
