/**
 * One worker process of bench/cluster-throughput.ts: a Worker of the partitioned queue on the
 * cluster given in argv (JSON), with a no-op handler. Prints "ready" once claiming; exits on SIGTERM.
 */
import { Worker } from '../../src/index.js';

interface Args {
  seeds: Array<{ host: string; port: number }>;
  queue: string;
  partitions: number;
  concurrency: number;
}

const args = JSON.parse(process.argv[2] ?? '{}') as Args;
const worker = new Worker(args.queue, async () => {}, {
  connection: { cluster: args.seeds },
  partitions: args.partitions,
  concurrency: args.concurrency,
});
worker.on('error', (err) => console.error(`worker ${process.pid}: ${err.message}`));
await worker.waitUntilReady();
console.log('ready');
process.once('SIGTERM', () => {
  void worker.close({ timeoutMs: 2_000 }).then(() => process.exit(0));
});
