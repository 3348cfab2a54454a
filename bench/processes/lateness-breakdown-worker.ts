/**
 * The worker side of bench/lateness-breakdown.ts, in its own process as a user runs it: records,
 * per job, the due time the producer asked for, the due time Redis stored (runAt), the claim time
 * (Redis clock) and the handler's Date.now(), and sends them all to the parent when done.
 */
import { Worker } from '../../src/index.js';

const [url, queue, expectText, concurrencyText] = process.argv.slice(2);
const expect = Number(expectText);
const rows: number[] = [];
let seen = 0;
const worker = new Worker<{ due: number }>(
  queue!,
  async (job) => {
    const now = Date.now();
    rows.push(job.payload.due, job.runAt.getTime(), job.claimedAt.getTime(), now);
    if (++seen === expect) process.send?.({ rows });
  },
  { connection: url!, concurrency: Number(concurrencyText ?? 50) },
);
await worker.waitUntilReady();
process.send?.({ ready: true });
process.on('message', () => {
  void worker.close({ timeoutMs: 1_000 }).finally(() => process.exit(0));
});
