/** `delayq demo` (what `npm start` runs): the whole life of a job, on a local or private Redis, with the dashboard. */
import type { Command } from 'commander';
import { runDemo } from '../demo/demo.js';
import { durationArg, globalsOf, intArg, output } from './context.js';

interface DemoFlags {
  once?: boolean;
  jobs?: number;
  span: number;
  concurrency: number;
  failEvery: number;
  dieEvery: number;
  port: number;
  dashboard: boolean;
  waveEvery: number;
}

export function registerDemo(program: Command): void {
  program
    .command('demo')
    .description(
      'run a live demo until Ctrl-C: waves of delayed jobs (some retried, a few dying), a worker, and the dashboard',
    )
    .option('--once', 'schedule one batch (--jobs), run it, and exit')
    .option('--jobs <n>', 'jobs in the batch; implies --once', intArg(1))
    .option('--span <duration>', 'with --once: spread due times over this long', durationArg, 10_000)
    .option('--concurrency <n>', 'handlers at once', intArg(1), 10)
    .option('--fail-every <n>', 'every n-th job fails its first attempt (0: none)', intArg(0), 7)
    .option('--die-every <n>', 'every n-th job fails every attempt and dies (0: none)', intArg(0), 19)
    .option('--port <port>', 'dashboard port on 127.0.0.1 (0: any free port)', intArg(0), 4600)
    .option('--no-dashboard', 'do not start the dashboard')
    .option('--wave-every <duration>', 'pause between waves of jobs', durationArg, 3_000)
    .action(async (flags: DemoFlags, command: Command) => {
      const out = output(globalsOf(command));
      const stop = new AbortController();
      let signals = 0;
      const onSignal = (signal: NodeJS.Signals): void => {
        signals++;
        if (signals > 1) {
          process.stderr.write(`delayq: second ${signal}, exiting without cleaning up\n`);
          process.exit(130);
        }
        stop.abort();
      };
      process.on('SIGINT', onSignal);
      process.on('SIGTERM', onSignal);
      try {
        const once = flags.once === true || flags.jobs !== undefined;
        const summary = await runDemo({
          once,
          jobs: flags.jobs ?? 20,
          spanMs: flags.span,
          concurrency: flags.concurrency,
          failEvery: flags.failEvery,
          dieEvery: flags.dieEvery,
          port: flags.dashboard ? flags.port : null,
          waveEveryMs: flags.waveEvery,
          signal: stop.signal,
          out: (line) => (out.json ? undefined : console.log(line)),
          colors: out.c,
        });
        out.data({ ...summary, lateness: undefined, latenessMs: summary.lateness });
      } finally {
        process.off('SIGINT', onSignal);
        process.off('SIGTERM', onSignal);
      }
    });
}
