/**
 * One worker process of the baseline comparison. argv[2] is JSON: { system, url, queue, ledger,
 * concurrency, leaseMs }. Appends one line per handler start to the ledger (synchronously, so a
 * SIGKILL loses nothing written): { id, pid, start, due }.
 */
import { appendFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { Worker, type StrategyOption } from '../../src/index.js';
import { naiveWork } from './naive-poller.js';

interface Config {
  system: 'naive' | StrategyOption;
  url: string;
  queue: string;
  ledger: string;
  concurrency: number;
  leaseMs: number;
  handlerMs: number;
}

const config = JSON.parse(process.argv[2] ?? '{}') as Config;
const record = (id: string, due: number): void =>
  appendFileSync(config.ledger, `${JSON.stringify({ id, pid: process.pid, start: Date.now(), due })}\n`);
const work = (): Promise<void> => new Promise((r) => setTimeout(r, config.handlerMs));

let stopping = false;
process.on('SIGTERM', () => (stopping = true));

if (config.system === 'naive') {
  const redis = new Redis(config.url);
  process.send?.('ready');
  await naiveWork(
    redis,
    config.queue,
    config.concurrency,
    async (id, due) => {
      record(id, due);
      await work();
    },
    () => stopping,
  );
  await redis.quit();
} else {
  const worker = new Worker<null>(
    config.queue,
    async (job) => {
      record(job.id, job.runAt.getTime());
      await work();
    },
    {
      connection: config.url,
      concurrency: config.concurrency,
      leaseMs: config.leaseMs,
      strategy: config.system,
    },
  );
  worker.on('error', () => {}); // lease losses after a kill are expected here; the ledger tells
  await worker.waitUntilReady();
  process.send?.('ready');
  while (!stopping) await new Promise((r) => setTimeout(r, 50));
  await worker.close({ timeoutMs: 5_000 });
}
process.exit(0);
