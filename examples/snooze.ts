/**
 * Honouring a receiver's 429 Retry-After without spending an attempt: the handler throws a
 * SnoozeError with the delay the receiver asked for, and the job is due again after it, its
 * attempt uncounted. Real failures still go by the job's attempts and backoff.
 *
 * A local HTTP receiver answers 429 with `Retry-After: 1` to its first two requests, then 200.
 * The job has a single attempt: it completes on that attempt, after two snoozes.
 *
 * Starts a throwaway redis-server of its own (never 127.0.0.1:6379) and ends by itself; exits
 * non-zero when the job did not complete on attempt 1 after two snoozes.
 *
 *   npx tsx examples/snooze.ts
 *
 * In your project the imports are `from 'delayq'` and `from 'delayq/testing'`.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Queue, SnoozeError, Worker } from '../src/index.js';
import { startRedis } from '../src/testing/index.js';

interface Delivery {
  url: string;
  body: string;
}

let requests = 0;
const receiver = createServer((_req, res) => {
  requests++;
  if (requests <= 2) {
    res.writeHead(429, { 'retry-after': '1' }).end();
  } else {
    res.writeHead(200).end('ok');
  }
});
await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;

const redis = await startRedis();
try {
  const queue = new Queue<Delivery>('webhooks', { connection: redis.url });
  const worker = new Worker<Delivery, { status: number }>(
    'webhooks',
    async (job) => {
      const res = await fetch(job.payload.url, {
        method: 'POST',
        body: job.payload.body,
        signal: job.signal,
      });
      if (res.status === 429) throw new SnoozeError(`${Number(res.headers.get('retry-after') ?? 30)}s`);
      if (!res.ok) throw new Error(`receiver answered ${res.status}`); // an attempt, retried by backoff
      return { status: res.status };
    },
    // Keep completed jobs with their results, so get() shows the receipt.
    { connection: redis.url, keepCompleted: { count: 100, age: '1h' } },
  );
  worker.on('snoozed', (job, runAt, delayMs) =>
    console.log(`attempt ${job.attempt} snoozed ${delayMs} ms, due again at ${runAt.toISOString()}`),
  );
  const done = new Promise<number>((resolve) => worker.on('completed', (job) => resolve(job.attempt)));

  const { id } = await queue.add({ url, body: '{"event":"paid"}' }, { attempts: 1 });
  const attempt = await done;
  const info = await queue.get<{ status: number }>(id);
  console.log(`completed on attempt ${attempt} of ${info?.maxAttempts}: ${JSON.stringify(info?.result)}`);
  await worker.close();
  await queue.close();
  if (attempt !== 1 || requests !== 3 || info?.attempts !== 1 || info.result?.status !== 200) {
    throw new Error(
      `expected attempt 1 after two snoozes, got attempt ${attempt} after ${requests} requests`,
    );
  }
} finally {
  await redis.stop();
  receiver.close();
}
