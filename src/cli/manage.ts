/**
 * `delayq cancel`, `reschedule`, `retry` and `remove`: change waiting, running (cancel) and dead jobs; `pause` and
 * `resume`: stop and start the claiming of a whole queue.
 */
import { Option, type Command } from 'commander';
import {
  dateArg,
  durationArg,
  globalsOf,
  OperationalError,
  output,
  RUN_AT_RENAMED,
  UsageError,
  withQueue,
} from './context.js';
import { progress } from './progress.js';

export function registerManage(program: Command): void {
  program
    .command('pause <queue>')
    .description(
      'stop every worker of the queue from starting jobs (adds still accepted, running jobs finish)',
    )
    .action(async (name: string, _opts: unknown, command: Command) => {
      const globals = globalsOf(command);
      const out = output(globals);
      await withQueue(globals, name, async ({ queue }) => {
        await queue.pause();
        out.data({ queue: name, paused: true });
        out.line(`${out.c.yellow('paused')} ${name}`);
      });
    });

  program
    .command('resume <queue>')
    .description('let the workers of a paused queue start jobs again, at once')
    .action(async (name: string, _opts: unknown, command: Command) => {
      const globals = globalsOf(command);
      const out = output(globals);
      await withQueue(globals, name, async ({ queue }) => {
        await queue.resume();
        out.data({ queue: name, paused: false });
        out.line(`${out.c.green('resumed')} ${name}`);
      });
    });

  program
    .command('cancel <queue> <id>')
    .description('cancel a waiting or running job (a running one is stopped: its signal aborts)')
    .action(async (name: string, id: string, _opts: unknown, command: Command) => {
      const globals = globalsOf(command);
      const out = output(globals);
      await withQueue(globals, name, async ({ queue }) => {
        if (!(await queue.cancel(id))) {
          throw new OperationalError(
            `job '${id}' is neither waiting nor running in '${name}' (unknown, finished, cancelled or dead); nothing changed`,
          );
        }
        out.data({ queue: name, id, cancelled: true });
        out.line(`${out.c.green('cancelled')} ${id}`);
      });
    });

  program
    .command('reschedule <queue> <id>')
    .description('move a waiting job to a new time')
    .option('--delay <duration>', 'due this long from now', durationArg)
    .option('--run-at <date>', 'due at this time (ISO 8601 or epoch ms)', dateArg)
    .addOption(new Option('--at <date>').hideHelp())
    .action(
      async (
        name: string,
        id: string,
        opts: { delay?: number; runAt?: Date; at?: unknown },
        command: Command,
      ) => {
        const globals = globalsOf(command);
        const out = output(globals);
        if (opts.at !== undefined) throw new UsageError(RUN_AT_RENAMED);
        if ((opts.delay === undefined) === (opts.runAt === undefined))
          throw new UsageError('give exactly one of --delay or --run-at');
        await withQueue(globals, name, async ({ queue }) => {
          const moved = await queue.reschedule(
            id,
            opts.delay !== undefined ? { delay: opts.delay } : { runAt: opts.runAt! },
          );
          if (!moved)
            throw new OperationalError(
              `job '${id}' is neither waiting nor running in '${name}' (unknown, finished, cancelled or dead); nothing changed`,
            );
          const info = await queue.get(id);
          const runAt = info?.runAt.toISOString() ?? null;
          out.data({ queue: name, id, rescheduled: true, runAt });
          out.line(`${out.c.green('rescheduled')} ${id}${runAt ? ` to ${runAt}` : ''}`);
        });
      },
    );

  program
    .command('retry <queue> [id]')
    .description('put a dead job (or every one, --all) back in the schedule, due now, attempts reset')
    .option('--all', 'every dead job of the queue')
    .action(async (name: string, id: string | undefined, opts: { all?: boolean }, command: Command) => {
      const globals = globalsOf(command);
      const out = output(globals);
      if ((id === undefined) === (opts.all !== true)) throw new UsageError('give a job id or --all');
      await withQueue(globals, name, async ({ queue }) => {
        if (id !== undefined) {
          if ((await queue.dead.retry(id)) === 0)
            throw new OperationalError(`job '${id}' is not dead in '${name}'; nothing changed`);
          out.data({ queue: name, retried: 1, ids: [id] });
          out.line(`${out.c.green('retried')} ${id}`);
          return;
        }
        const total = (await queue.counts()).dead;
        const bar = progress(`retrying dead jobs of ${name}`, total, out.json);
        let moved: number;
        try {
          moved = await queue.dead.retryAll({ onProgress: (n) => bar.update(n) });
        } finally {
          bar.finish();
        }
        out.data({ queue: name, retried: moved });
        out.line(`${out.c.green('retried')} ${moved} dead job${moved === 1 ? '' : 's'} of ${name}`);
      });
    });

  program
    .command('remove <queue> [id]')
    .description('delete a dead job (or every one, --all) for good, as queue.dead.remove(id) does')
    .option('--all', 'every dead job of the queue')
    .action(async (name: string, id: string | undefined, opts: { all?: boolean }, command: Command) => {
      const globals = globalsOf(command);
      const out = output(globals);
      if ((id === undefined) === (opts.all !== true)) throw new UsageError('give a job id or --all');
      await withQueue(globals, name, async (inspector) => {
        if (id !== undefined) {
          if (!(await inspector.queue.dead.remove(id)))
            throw new OperationalError(`job '${id}' is not dead in '${name}'; nothing changed`);
          out.data({ queue: name, removed: 1, ids: [id] });
          out.line(`${out.c.green('removed')} ${id}`);
          return;
        }
        const total = (await inspector.counts()).dead;
        const bar = progress(`removing dead jobs of ${name}`, total, out.json);
        let removed: number;
        try {
          removed = await inspector.purgeDead((n) => bar.update(n, Math.max(total, n)));
        } finally {
          bar.finish();
        }
        out.data({ queue: name, removed });
        out.line(`${out.c.green('removed')} ${removed} dead job${removed === 1 ? '' : 's'} of ${name}`);
      });
    });

  // The 0.1 name: one verb for removing a dead job everywhere (API, CLI, dashboard) is 'remove'.
  program
    .command('purge', { hidden: true })
    .allowUnknownOption()
    .allowExcessArguments()
    .action(() => {
      throw new UsageError(
        "'purge' is now 'remove': delayq remove <queue> --all removes every dead job, delayq remove <queue> <id> one",
      );
    });
}
