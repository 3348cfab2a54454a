/**
 * One benchmark worker in its own process: `node --import tsx bench/processes/worker-process.ts '<ChildConfig>'`.
 * It talks to the parent only over the IPC channel (see lib/protocol.ts).
 */
import { performance } from 'node:perf_hooks';
import { createAdapter } from '../adapters/index.js';
import type { ChildConfig, ChildMessage, ParentMessage } from '../lib/protocol.js';

const config = JSON.parse(process.argv[2] ?? '') as ChildConfig;

function send(message: ChildMessage): void {
  process.send?.(message);
}

const never = new Promise<void>(() => {});
const lateness: number[] = [];
const serverLateness: number[] = [];
let firstStart = -1;
let completed = 0;
let reported = false;

const adapter = createAdapter(config.system, { url: config.url, queue: config.queue });
const worker = await adapter.startWorker({
  concurrency: config.concurrency,
  settings: config.settings,
  handler: async (job) => {
    const late = Date.now() - job.payload.due;
    // A warm-up job counts as completed but is neither timed nor measured.
    if (config.mode === 'count' && job.payload.warmup === true) return;
    if (firstStart < 0) firstStart = performance.now();
    if (config.mode === 'count') {
      lateness.push(late);
      if (job.serverLatenessMs !== null) serverLateness.push(job.serverLatenessMs);
      return;
    }
    send({
      type: 'started',
      pid: process.pid,
      i: job.payload.i,
      latenessMs: late,
      serverLatenessMs: job.serverLatenessMs,
    });
    if (config.mode === 'hold') await never;
  },
  onCompleted: () => {
    completed++;
    if (config.mode === 'count' && !reported && completed >= (config.expect ?? Infinity)) {
      reported = true;
      send({
        type: 'done',
        completed,
        elapsedMs: performance.now() - firstStart,
        latenessMs: lateness,
        serverLatenessMs: serverLateness,
      });
    }
  },
});

let closing = false;
process.on('message', (message: ParentMessage) => {
  if (message.type !== 'close' || closing) return;
  closing = true;
  void Promise.all([worker.close(), adapter.close()])
    .catch((err: unknown) => {
      // A held job never finishes, so a close that times out waiting for it is expected there.
      if (config.mode !== 'hold') console.error('worker-process close:', err);
    })
    .finally(() => process.exit(0));
});
process.on('disconnect', () => process.exit(0));
send({ type: 'ready' });
