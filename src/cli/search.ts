/**
 * `delayq search <queue> [--state] [--group] [--id-prefix] [--from] [--to] [--limit] [--cursor]`:
 * a page of queue.search, and the command that gives the next one.
 */
import { InvalidArgumentError, Option, type Command } from 'commander';
import { parseDuration } from '../duration.js';
import { JOB_INFO_STATES, type JobInfoState } from '../operations/raw-job.js';
import type { SearchOptions } from '../queue.js';
import { serverNow } from '../inspect/discover.js';
import { globalsOf, intArg, output, withQueue } from './context.js';
import { table } from './format.js';
import { jobJson, searchHeader, searchRow } from './jobs-view.js';

/** A time: ISO 8601, epoch ms, or a duration from now ('-1h' an hour ago, '+30m' in half an hour). */
function timeArg(value: string): (now: number) => number {
  const relative = /^([+-])(.+)$/.exec(value);
  if (relative) {
    let ms: number;
    try {
      ms = parseDuration(/^\d+$/.test(relative[2]!) ? Number(relative[2]) : relative[2]!, 'time');
    } catch (err) {
      throw new InvalidArgumentError(err instanceof Error ? err.message : String(err));
    }
    return (now) => (relative[1] === '-' ? now - ms : now + ms);
  }
  const at = /^\d+$/.test(value) ? Number(value) : new Date(value).getTime();
  if (Number.isNaN(at)) {
    throw new InvalidArgumentError("expected an ISO date, epoch ms, or a duration from now ('-1h', '+30m')");
  }
  return () => at;
}

interface SearchFlags {
  state?: JobInfoState;
  group?: string;
  idPrefix?: string;
  from?: (now: number) => number;
  to?: (now: number) => number;
  limit: number;
  cursor?: string;
}

export function registerSearch(program: Command): void {
  program
    .command('search <queue>')
    .alias('find')
    .description(
      'find jobs by state, group, id prefix and time range (due, started or ended), a page at a time; --cursor goes on',
    )
    .addOption(
      new Option('--state <state>', 'only jobs in this state (default: every state)').choices(
        JOB_INFO_STATES,
      ),
    )
    .option('--group <group>', "only this group's waiting and running jobs")
    .option('--id-prefix <prefix>', 'only jobs whose id starts with this')
    .option('--from <time>', "time at or after: ISO date, epoch ms, or from now ('-1h')", timeArg)
    .option('--to <time>', "time at or before: ISO date, epoch ms, or from now ('+30m')", timeArg)
    .option('--limit <n>', 'most jobs per page (1-1000)', intArg(1), 20)
    .option('--cursor <cursor>', 'the cursor a page printed: its next page')
    .action(async (name: string, flags: SearchFlags, command: Command) => {
      const globals = globalsOf(command);
      const out = output(globals);
      await withQueue(globals, name, async (inspector, client) => {
        const now = await serverNow(client);
        const options: SearchOptions = { limit: flags.limit };
        if (flags.state !== undefined) options.state = flags.state;
        if (flags.group !== undefined) options.group = flags.group;
        if (flags.idPrefix !== undefined) options.idPrefix = flags.idPrefix;
        if (flags.from) options.from = flags.from(now);
        if (flags.to) options.to = flags.to(now);
        if (flags.cursor !== undefined) options.cursor = flags.cursor;
        const page = await inspector.queue.search(options);
        out.data({ queue: name, jobs: page.jobs.map(jobJson), cursor: page.cursor });
        const { c } = out;
        if (page.jobs.length > 0) {
          out.line(table([searchHeader().map(c.bold), ...page.jobs.map((j) => searchRow(j, now, c))]));
        } else {
          out.line(c.dim(page.cursor === null ? 'no jobs found' : 'no jobs in this part of the queue'));
        }
        if (page.cursor === null) {
          out.line(c.dim(`${page.jobs.length} job${page.jobs.length === 1 ? '' : 's'}; end of the search`));
        } else {
          out.line(
            c.dim(
              `${page.jobs.length} job${page.jobs.length === 1 ? '' : 's'}; the next page: the same command with --cursor ${page.cursor}`,
            ),
          );
        }
      });
    });
}
