/**
 * `delayq ls <queue> --state scheduled|waiting-children|active|dead|completed|cancelled [--limit]
 * [--offset]`: a page of jobs.
 */
import { Option, type Command } from 'commander';
import { globalsOf, intArg, output, withQueue } from './context.js';
import { table } from './format.js';
import type { ListState } from '../operations/list.js';
import { countOf } from '../queue/reads.js';
import { jobJson, listHeader, listRow } from './jobs-view.js';

type State = ListState;

export function registerLs(program: Command): void {
  program
    .command('ls <queue>')
    .alias('list') // as queue.list()
    .description(
      'list a page of jobs: scheduled (due prioritized first, then by due time), waiting-children (flow parents, by due time), active, or dead, completed and cancelled (most recent first)',
    )
    .addOption(
      new Option('--state <state>', 'which jobs')
        .choices(['scheduled', 'waiting-children', 'active', 'dead', 'completed', 'cancelled'])
        .default('scheduled'),
    )
    .option('--limit <n>', 'jobs per page (1-10000)', intArg(1), 20)
    .option('--offset <n>', 'skip this many', intArg(0), 0)
    .action(async (name: string, opts: { state: State; limit: number; offset: number }, command: Command) => {
      const globals = globalsOf(command);
      const out = output(globals);
      await withQueue(globals, name, async (inspector) => {
        const [jobs, counts] = await Promise.all([
          inspector.list(opts.state, { offset: opts.offset, limit: Math.min(opts.limit, 10_000) }),
          inspector.counts(),
        ]);
        const { now } = counts;
        out.data({
          queue: name,
          state: opts.state,
          offset: opts.offset,
          total: countOf(counts, opts.state),
          jobs: jobs.map(jobJson),
        });
        const { c } = out;
        if (jobs.length === 0) {
          out.line(
            c.dim(`no ${opts.state} jobs${opts.offset > 0 ? ` after offset ${opts.offset}` : ''} in ${name}`),
          );
          return;
        }
        out.line(
          table([listHeader(opts.state).map(c.bold), ...jobs.map((j) => listRow(opts.state, j, now, c))]),
        );
        out.line(
          c.dim(
            `${opts.offset + 1}-${opts.offset + jobs.length} of ${countOf(counts, opts.state)} ${opts.state}`,
          ),
        );
      });
    });
}
