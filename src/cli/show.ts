/** `delayq show <queue> <id>`: everything known about one job. */
import type { Command } from 'commander';
import { serverNow } from '../inspect/discover.js';
import { globalsOf, OperationalError, output, withQueue } from './context.js';
import { detailLines, jobJson } from './jobs-view.js';

export function registerShow(program: Command): void {
  program
    .command('show <queue> <id>')
    .alias('get') // as queue.get(id)
    .description(
      'everything known about one job: state, due time, attempts, priority, lease, payload (or result), last error, log lines',
    )
    .action(async (name: string, id: string, _opts: unknown, command: Command) => {
      const globals = globalsOf(command);
      const out = output(globals);
      await withQueue(globals, name, async (inspector, client) => {
        const [info, now] = await Promise.all([inspector.queue.get(id), serverNow(client)]);
        if (!info)
          throw new OperationalError(
            `no job '${id}' in queue '${name}' (it never existed, or finished longer ago than completed, cancelled and dead jobs are kept)`,
          );
        out.data(jobJson(info));
        for (const line of detailLines(info, now, out.c)) out.line(line);
      });
    });
}
