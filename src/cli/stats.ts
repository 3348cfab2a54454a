/** `delayq stats [queue]`: counts of every queue, or one queue's counts, next due time, strategy and lateness. */
import type { Command } from 'commander';
import type { Redis } from 'ioredis';
import { discoverQueues, nextDue, openQueue, serverNow } from '../dashboard/read.js';
import { percentile } from '../demo/stats.js';
import type { Queue } from '../queue.js';
import { chooseStrategy, probeCapabilities } from '../redis/capabilities.js';
import { connect, globalsOf, output, redisUrl, withQueue } from './context.js';
import { relative, table } from './format.js';

/** Active jobs looked at for lateness: enough for a picture, bounded for a huge queue. */
const LATENESS_SAMPLE = 1_000;

export function registerStats(program: Command): void {
  program
    .command('stats [queue]')
    .description('counts of every queue; with a queue: counts, next due time, strategy, recent lateness')
    .action(async (name: string | undefined, _opts: unknown, command: Command) => {
      const globals = globalsOf(command);
      const out = output(globals);
      if (name === undefined) {
        const client = await connect(redisUrl(globals));
        try {
          await allQueues(client, out);
        } finally {
          await client.quit().catch(() => client.disconnect());
        }
        return;
      }
      await withQueue(globals, name, (queue, client) => oneQueue(queue, client, out));
    });
}

async function allQueues(client: Redis, out: ReturnType<typeof output>): Promise<void> {
  const names = await discoverQueues(client);
  const now = await serverNow(client);
  const rows = await Promise.all(
    names.map(async (name) => {
      const queue = await openQueue(client, name);
      try {
        const [counts, next] = await Promise.all([queue.counts(), nextDue(client, queue.partitions)]);
        return { name, ...counts, nextDue: next };
      } finally {
        await queue.close();
      }
    }),
  );
  out.data({ now, queues: rows });
  if (rows.length === 0) {
    out.line('no queues with jobs');
    return;
  }
  const { c } = out;
  out.line(
    table(
      [
        ['queue', 'scheduled', 'due', 'active', 'dead', 'next due'].map(c.bold),
        ...rows.map((r) => [
          r.name,
          String(r.scheduled),
          r.due > 0 ? c.yellow(String(r.due)) : '0',
          String(r.active),
          r.dead > 0 ? c.red(String(r.dead)) : '0',
          r.nextDue === null ? c.dim('-') : relative(r.nextDue, now),
        ]),
      ],
      new Set([1, 2, 3, 4]),
    ),
  );
}

async function oneQueue(queue: Queue, client: Redis, out: ReturnType<typeof output>): Promise<void> {
  const [counts, now, next, caps, layout] = await Promise.all([
    queue.counts(),
    serverNow(client),
    nextDue(client, queue.partitions),
    probeCapabilities(client),
    client.get(queue.keys.layout),
  ]);
  // A wheel queue says so in its recorded layout; otherwise workers probe as 'auto' does here.
  const wheel = /^wheel:(\d+)$/.exec(layout ?? '');
  const strategy = wheel ? `wheel (${wheel[1]} ms buckets)` : chooseStrategy('auto', caps);
  const active = counts.active > 0 ? await queue.list('active', { limit: LATENESS_SAMPLE }) : [];
  // Lateness of the attempts that started in the last minute and still run (the core keeps no record
  // of finished attempts), and how long the oldest due job has been waiting for a worker.
  const recent = active
    .filter((j) => j.lease && j.lease.startedAt.getTime() >= now - 60_000)
    .map((j) => Math.max(0, j.lease!.startedAt.getTime() - j.runAt.getTime()))
    .sort((a, b) => a - b);
  const waiting = counts.due > 0 && next !== null ? Math.max(0, now - next) : 0;
  const lateness = {
    runningStartedLastMinute: recent.length,
    p50Ms: percentile(recent, 0.5),
    maxMs: recent.at(-1) ?? 0,
    oldestDueWaitingMs: waiting,
  };
  out.data({ queue: queue.name, now, counts, nextDue: next, strategy, redisVersion: caps.version, lateness });
  const { c } = out;
  out.line(`${c.bold(queue.name)}  ${c.dim(`(Redis ${caps.version}, claim strategy ${strategy})`)}`);
  out.line(
    table(
      [
        ['scheduled', String(counts.scheduled)],
        ['due now', counts.due > 0 ? c.yellow(String(counts.due)) : '0'],
        ['active', String(counts.active)],
        ['dead', counts.dead > 0 ? c.red(String(counts.dead)) : '0'],
        [
          'next due',
          next === null
            ? c.dim('nothing waiting')
            : `${new Date(next).toISOString()} (${relative(next, now)})`,
        ],
        [
          'lateness',
          recent.length === 0
            ? c.dim('no attempt started in the last minute is still running')
            : `p50 ${lateness.p50Ms} ms, max ${lateness.maxMs} ms over ${recent.length} running attempts started in the last minute`,
        ],
        [
          'waiting',
          waiting > 0
            ? c.yellow(`the oldest due job has waited ${waiting} ms for a worker`)
            : 'no due job is waiting',
        ],
      ],
      new Set(),
    ),
  );
}
