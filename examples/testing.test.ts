/**
 * How to test your own handlers with delayq/testing (run with vitest; any test runner works).
 *
 * - runHandler(handler, payload): the handler against a job built in memory: no Redis, no worker.
 *   The payload goes through the JSON codec first, so the handler sees what it would see from Redis.
 * - startRedis(): a throwaway redis-server on a free port, in a temp dir; stop() removes it.
 * - drain(queue, handler): runs every job due now with a worker of its own and waits until the
 *   queue has nothing due or running; it reports what completed, failed and died.
 *
 * In your project the imports are:
 *   import { Queue, type Job } from 'delayq';
 *   import { drain, runHandler, startRedis, type RedisServer } from 'delayq/testing';
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Queue, type Job } from '../src/index.js';
import { drain, runHandler, startRedis, type RedisServer } from '../src/testing/index.js';

// The code under test: a handler that sends reminders through some mailer.
interface Reminder {
  to: string;
  text: string;
  dueAt: Date;
}

const outbox: string[] = [];

async function sendReminder(job: Job<Reminder>): Promise<{ sentTo: string }> {
  if (!job.payload.to.includes('@')) throw new Error(`not an address: ${job.payload.to}`);
  if (job.signal.aborted) throw new Error('aborted before sending');
  outbox.push(`${job.payload.to}: ${job.payload.text} (due ${job.payload.dueAt.toISOString()})`);
  return { sentTo: job.payload.to };
}

describe('sendReminder, without Redis', () => {
  it('sends to the address, and the Date in the payload arrives as a Date', async () => {
    const dueAt = new Date('2026-03-01T09:00:00Z');
    const result = await runHandler(sendReminder, { to: 'ada@example.com', text: 'standup', dueAt });
    expect(result).toEqual({ sentTo: 'ada@example.com' });
    expect(outbox.at(-1)).toBe('ada@example.com: standup (due 2026-03-01T09:00:00.000Z)');
  });

  it('fails on a bad address', async () => {
    await expect(runHandler(sendReminder, { to: 'nobody', text: 'x', dueAt: new Date() })).rejects.toThrow(
      'not an address: nobody',
    );
  });

  it('stops when its signal is aborted (a lost lease or a shutdown)', async () => {
    const controller = new AbortController();
    controller.abort();
    const job = { to: 'ada@example.com', text: 'x', dueAt: new Date() };
    await expect(runHandler(sendReminder, job, { signal: controller.signal })).rejects.toThrow('aborted');
  });
});

describe('sendReminder on a real queue', () => {
  let redis: RedisServer;
  let queue: Queue<Reminder>;

  beforeAll(async () => {
    redis = await startRedis();
    queue = new Queue<Reminder>('reminders', { connection: redis.url });
  });

  afterAll(async () => {
    await queue.close();
    await redis.stop();
  });

  it('drain runs what is due and leaves what is not', async () => {
    const dueAt = new Date('2026-03-01T09:00:00Z');
    await queue.add({ to: 'ada@example.com', text: 'now', dueAt }, { id: 'r1' });
    await queue.add({ to: 'bob@example.com', text: 'later', dueAt }, { id: 'r2', delay: '1h' });
    await queue.add({ to: 'nobody', text: 'broken', dueAt }, { id: 'r3', attempts: 1 });

    const out = await drain(queue, sendReminder);

    expect(out.completed.map((c) => [c.id, c.result])).toEqual([['r1', { sentTo: 'ada@example.com' }]]);
    expect(out.dead.map((d) => [d.id, d.error.message])).toEqual([['r3', 'not an address: nobody']]);
    expect(await queue.counts()).toEqual({
      scheduled: 1,
      due: 0,
      held: 0,
      active: 0,
      dead: 1,
      completed: 1,
      cancelled: 0,
      waitingChildren: 0,
    });
    expect((await queue.get('r2'))?.state).toBe('scheduled');
  });
});
