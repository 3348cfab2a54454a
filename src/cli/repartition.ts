/**
 * `delayq repartition <queue> --to P`: grow a running queue's partition count
 * (queue.repartition(), docs/CLUSTER.md "Re-partitioning a live queue"), then show the workers
 * following it: a bar of the workers registered in the last partition against those in the first,
 * until all follow or --wait ends, and each partition's waiting and running jobs.
 */
import type { Command } from 'commander';
import type { RepartitionStatus } from '../queue/repartition.js';
import { durationArg, globalsOf, intArg, output, withQueue, type Output } from './context.js';
import { progress } from './progress.js';

/** How often the status is read while waiting for the workers. */
const POLL_MS = 250;

export function registerRepartition(program: Command): void {
  program
    .command('repartition <queue>')
    .description(
      'grow the partition count of a running queue (jobs never move; workers and producers follow within about a second); shrinking is refused',
    )
    .requiredOption('--to <count>', 'the new partition count (>= the recorded one)', intArg(1))
    .option(
      '--wait <duration>',
      'how long to show the workers following (default 10s; 0: do not wait)',
      durationArg,
    )
    .action(async (name: string, opts: { to: number; wait?: number }, command: Command) => {
      const globals = globalsOf(command);
      const out = output(globals);
      await withQueue(globals, name, async ({ queue }) => {
        const before = (await queue.repartitionStatus()).partitions;
        let status = await queue.repartition(opts.to);
        out.line(
          status.partitions === before
            ? `${name}: partitions ${before} already (no change)`
            : `${out.c.green('re-partitioned')} ${name}: partitions ${before} -> ${status.partitions} (ids and groups you choose stay placed by ${status.base})`,
        );
        const waitMs = opts.wait ?? 10_000;
        const bar = progress('workers following', status.perPartition[0]!.workers, out.json);
        const until = Date.now() + waitMs;
        let shown = -1;
        while (!status.following && Date.now() < until) {
          const following = status.perPartition[status.perPartition.length - 1]!.workers;
          bar.update(following, status.perPartition[0]!.workers);
          // Off a terminal (no bar): a line each time another worker follows.
          if (!process.stderr.isTTY && following !== shown) {
            shown = following;
            out.line(`workers following: ${following}/${status.perPartition[0]!.workers}`);
          }
          await new Promise((resolve) => setTimeout(resolve, POLL_MS));
          status = await queue.repartitionStatus();
        }
        bar.finish();
        show(out, status, before);
      });
    });
}

/** The status as lines, or as one JSON document. */
function show(out: Output, status: RepartitionStatus, before: number): void {
  out.data({ ...status, previous: before });
  const first = status.perPartition[0]!.workers;
  const last = status.perPartition[status.perPartition.length - 1]!.workers;
  out.line(
    status.following
      ? `workers: ${last}/${first} follow partitions ${status.partitions}`
      : `${out.c.yellow('workers')}: ${last}/${first} follow so far (a worker follows within about a second; one with a rate limit never does)`,
  );
  out.line('partition  waiting  running  workers');
  for (const p of status.perPartition) {
    out.line(
      `${String(p.partition).padStart(9)}  ${String(p.waiting).padStart(7)}  ${String(p.running).padStart(7)}  ${String(p.workers).padStart(7)}`,
    );
  }
}
