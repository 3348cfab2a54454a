/**
 * `delayq stats [queue]`: for every known queue (or the one named) its counts (flow parents
 * waiting for their children among them), next due time, claim strategy and the lateness of the
 * last minute's claims (from the counters, so every worker's, wherever it runs); with a queue,
 * also the due times of the coming hour.
 */
import type { Command } from 'commander';
import type { Redis } from 'ioredis';
import { discoverQueues } from '../inspect/discover.js';
import { Inspector, type DueHistogram, type Lateness } from '../inspect/inspector.js';
import type { Counts } from '../operations/counts.js';
import type { QueueCounts } from '../queue/reads.js';
import { CODEC_HINT, loadCodecModule } from './codec-module.js';
import { connect, globalsOf, output, redisUrl, withQueue } from './context.js';
import { relative, table } from './format.js';

/** One queue's row. */
interface QueueStats {
  queue: string;
  counts: QueueCounts;
  strategy: string;
  lateness: Lateness;
  paused: boolean;
}

/** The due chart of `delayq stats <queue>`: the coming hour in 12 slices of 5 minutes. */
const CHART = { bucketMs: 5 * 60_000, buckets: 12 };

export function registerStats(program: Command): void {
  program
    .command('stats [queue]')
    .description(
      'counts, next due time, strategy and recent lateness of every queue (or one, with its due chart)',
    )
    .action(async (name: string | undefined, _opts: unknown, command: Command) => {
      const globals = globalsOf(command);
      const out = output(globals);
      if (name !== undefined) {
        await withQueue(globals, name, (inspector) => oneQueue(inspector, out));
        return;
      }
      const codecs = await loadCodecModule(globals.codecModule);
      const client = await connect(redisUrl(globals));
      try {
        await allQueues(client, out, (queue) =>
          Inspector.open(client, queue, { codecs, codecHint: CODEC_HINT }),
        );
      } finally {
        await client.quit().catch(() => client.disconnect());
      }
    });
}

async function statsOf(inspector: Inspector, counts?: QueueCounts): Promise<QueueStats> {
  counts ??= await inspector.counts();
  const [strategy, lateness] = await Promise.all([inspector.strategy(), inspector.lateness(counts)]);
  return { queue: inspector.name, counts, strategy, lateness, paused: counts.paused };
}

function latenessText(l: Lateness): string {
  const recent =
    l.claimedLastMinute === 0
      ? '-'
      : `avg ${l.avgMs} ms, p99 ≤ ${l.p99Ms} ms (${l.claimedLastMinute} claimed)`;
  return l.oldestDueWaitingMs > 0 ? `${recent}; oldest due waits ${l.oldestDueWaitingMs} ms` : recent;
}

/** The lateness line of `delayq stats <queue>`. */
function latenessLine(l: Lateness): string {
  return `avg ${l.avgMs} ms, p50 ≤ ${l.p50Ms} ms, p99 ≤ ${l.p99Ms} ms over ${l.claimedLastMinute} ${l.claimedLastMinute === 1 ? 'job' : 'jobs'} claimed in the last minute`;
}

async function allQueues(
  client: Redis,
  out: ReturnType<typeof output>,
  open: (name: string) => Promise<Inspector>,
): Promise<void> {
  const names = await discoverQueues(client);
  const rows = await Promise.all(
    names.map(async (name) => {
      const inspector = await open(name);
      try {
        return await statsOf(inspector);
      } finally {
        await inspector.close();
      }
    }),
  );
  const now = rows.reduce((n, r) => Math.max(n, r.counts.now), 0);
  out.data({ now, queues: rows.map((r) => ({ name: r.queue, ...json(r) })) });
  if (rows.length === 0) {
    out.line('no queues');
    return;
  }
  const { c } = out;
  out.line(
    table(
      [
        [
          'queue',
          'scheduled',
          'due',
          'held',
          'active',
          'dead',
          'completed',
          'cancelled',
          'waiting-children',
          'next due',
          'strategy',
          'lateness',
        ].map(c.bold),
        ...rows.map(({ queue, counts: n, strategy, lateness, paused }) => [
          paused ? `${queue} ${c.yellow('(paused)')}` : queue,
          String(n.scheduled),
          n.due > 0 ? c.yellow(String(n.due)) : '0',
          n.held > 0 ? c.yellow(String(n.held)) : '0',
          String(n.active),
          n.dead > 0 ? c.red(String(n.dead)) : '0',
          String(n.completed),
          String(n.cancelled),
          String(n.waitingChildren),
          n.nextDue === null ? c.dim('-') : relative(n.nextDue, n.now),
          strategy,
          latenessText(lateness),
        ]),
      ],
      new Set([1, 2, 3, 4, 5, 6, 7, 8]),
    ),
  );
}

/** The counts alone (no clock, next due time or pause). */
function plainCounts(c: QueueCounts): Counts {
  return {
    scheduled: c.scheduled,
    due: c.due,
    held: c.held,
    active: c.active,
    dead: c.dead,
    completed: c.completed,
    cancelled: c.cancelled,
    waitingChildren: c.waitingChildren,
  };
}

function json(r: QueueStats): Record<string, unknown> {
  return {
    ...plainCounts(r.counts),
    nextDue: r.counts.nextDue,
    strategy: r.strategy,
    lateness: r.lateness,
    paused: r.paused,
  };
}

async function oneQueue(inspector: Inspector, out: ReturnType<typeof output>): Promise<void> {
  // The counts and the chart from the same reads, so they agree.
  const { histogram: due, ...counts } = await inspector.figures(CHART);
  const { strategy, lateness, paused } = await statsOf(inspector, counts);
  const { now, nextDue: next } = counts;
  const redisVersion = await inspector.redisVersion();
  out.data({
    queue: inspector.name,
    now,
    counts: plainCounts(counts),
    nextDue: next,
    strategy,
    redisVersion,
    lateness,
    due,
    paused,
  });
  const { c } = out;
  out.line(`${c.bold(inspector.name)}  ${c.dim(`(Redis ${redisVersion}, claim strategy ${strategy})`)}`);
  out.line(
    table(
      [
        ['paused', paused ? c.yellow('yes: workers start no job until `delayq resume`') : 'no'],
        ['scheduled', String(counts.scheduled)],
        ['due now', counts.due > 0 ? c.yellow(String(counts.due)) : '0'],
        [
          'held',
          counts.held > 0
            ? c.yellow(`${counts.held} of the due jobs wait for their group (its bound, rate or pause)`)
            : '0',
        ],
        ['active', String(counts.active)],
        ['dead', counts.dead > 0 ? c.red(String(counts.dead)) : '0'],
        ['completed', `${counts.completed} ${c.dim('(kept)')}`],
        ['cancelled', `${counts.cancelled} ${c.dim('(kept)')}`],
        [
          'waiting-children',
          counts.waitingChildren > 0
            ? `${counts.waitingChildren} ${c.dim('(flow parents waiting for their children; not in scheduled)')}`
            : '0',
        ],
        [
          'next due',
          next === null
            ? c.dim('nothing waiting')
            : `${new Date(next).toISOString()} (${relative(next, now)})`,
        ],
        [
          'lateness',
          lateness.claimedLastMinute === 0
            ? c.dim('no job was claimed in the last minute')
            : latenessLine(lateness),
        ],
        [
          'waiting',
          lateness.oldestDueWaitingMs > 0
            ? c.yellow(
                // A held job waits for its group (its bound, rate or pause), not for a worker.
                `the oldest due job has waited ${lateness.oldestDueWaitingMs} ms for a worker${counts.held > 0 ? ' or its group (see held)' : ''}`,
              )
            : 'no due job is waiting',
        ],
        ['due', dueChart(due)],
      ],
      new Set(),
    ),
  );
}

/** The coming hour as one line: jobs already due, then per slice. */
function dueChart(due: DueHistogram): string {
  const minutes = due.bucketMs / 60_000;
  const slices = due.counts.map((n, i) => `${(i + 1) * minutes}m:${n}`).join(' ');
  return `now:${due.overdue} ${slices}`;
}
