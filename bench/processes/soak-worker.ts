/**
 * One soak worker in its own process: `node --import tsx bench/processes/soak-worker.ts '<SoakWorkerConfig>'`,
 * spawned by bench/soak.ts. Every handler start and end and every completed or dead job is appended
 * synchronously to this process's ledger file (outside Redis; a SIGKILL loses nothing already
 * written), in the pattern of test/chaos/ledger.ts. Talks to the parent over IPC: 'ready' once
 * claiming, 'stats' every few seconds; closes gracefully on { type: 'close' }.
 */
import { appendFileSync } from 'node:fs';
import { Worker } from '../../src/index.js';
import type { SoakEntry, SoakPayload, SoakWorkerConfig, SoakWorkerMessage } from '../lib/soak-ledger.js';

const config = JSON.parse(process.argv[2] ?? '') as SoakWorkerConfig;

function record(entry: SoakEntry): void {
  appendFileSync(config.ledger, `${JSON.stringify(entry)}\n`);
}

function send(message: SoakWorkerMessage): void {
  process.send?.(message);
}

let completed = 0;
let failed = 0;
let dead = 0;

const worker = new Worker<SoakPayload>(
  config.queue,
  async (job) => {
    record({ e: 's', id: job.id, a: job.attempt, t: Date.now() });
    const p = job.payload;
    // A few ms of "work", so some jobs are always in flight when a SIGKILL lands.
    if (p.ms > 0) await new Promise((resolve) => setTimeout(resolve, p.ms));
    const fail = p.k === 'always' || (p.k === 'once' && job.attempt === 1);
    record({ e: 'e', id: job.id, a: job.attempt, t: Date.now(), ok: !fail });
    if (fail) throw new Error('deliberate failure');
  },
  { connection: config.url, concurrency: config.concurrency },
);
worker.on('completed', (job) => {
  completed++;
  record({ e: 'c', id: job.id, t: Date.now() });
});
worker.on('failed', () => {
  failed++;
});
worker.on('dead', (_job, _error, id) => {
  dead++;
  record({ e: 'd', id, t: Date.now() });
});
worker.on('error', (err) => console.error(`soak worker ${process.pid}: ${err.message}`));

const stats = setInterval(() => send({ type: 'stats', completed, failed, dead }), 5_000);

let closing = false;
process.on('message', (message: { type: string }) => {
  if (message.type !== 'close' || closing) return;
  closing = true;
  clearInterval(stats);
  worker
    .close({ timeoutMs: 5_000 })
    .catch((err: unknown) => console.error('soak worker close:', err))
    .finally(() => process.exit(0));
});
process.on('disconnect', () => process.exit(0));

await worker.waitUntilReady();
send({ type: 'ready' });
