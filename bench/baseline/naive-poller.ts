/**
 * The naive delayed queue that delayq exists to replace, written the way it is often written:
 * ZADD to schedule; each worker polls ZRANGEBYSCORE every 100 ms, ZREMs what it got (unchecked)
 * and runs it. Under contention two workers take the same job; a worker that dies after its ZREM
 * loses the jobs it held. Used only by the baseline comparison.
 */
import { Redis } from 'ioredis';

const POLL_MS = 100;

/** Producer side: schedule `jobs` (id, due epoch ms by this machine's clock). */
export async function naiveAdd(
  redis: Redis,
  queue: string,
  jobs: ReadonlyArray<{ id: string; due: number }>,
): Promise<void> {
  const pipeline = redis.pipeline();
  for (const job of jobs) {
    pipeline.zadd(`naive:${queue}:schedule`, job.due, job.id);
    pipeline.hset(`naive:${queue}:data`, job.id, JSON.stringify({ due: job.due }));
  }
  await pipeline.exec();
}

/** Worker side: poll until `stop` resolves, running `handler` for each job taken. */
export async function naiveWork(
  redis: Redis,
  queue: string,
  concurrency: number,
  handler: (id: string, due: number) => Promise<void>,
  stopped: () => boolean,
): Promise<void> {
  const running = new Set<Promise<void>>();
  while (!stopped()) {
    const free = concurrency - running.size;
    const ids =
      free > 0
        ? await redis.zrangebyscore(`naive:${queue}:schedule`, '-inf', Date.now(), 'LIMIT', 0, free)
        : [];
    for (const id of ids) {
      await redis.zrem(`naive:${queue}:schedule`, id); // the classic mistake: the reply is not checked
      const data = await redis.hget(`naive:${queue}:data`, id);
      const due = data ? (JSON.parse(data) as { due: number }).due : 0;
      const run = handler(id, due)
        .then(() => void redis.hdel(`naive:${queue}:data`, id))
        .finally(() => running.delete(run));
      running.add(run);
    }
    if (ids.length < free || free === 0) await new Promise((r) => setTimeout(r, POLL_MS));
  }
  await Promise.all(running);
}
