#!/usr/bin/env node
/**
 * The `delayq` command.
 */
import { Command, InvalidArgumentError } from 'commander';
import { runDemo } from '../demo/demo.js';
import { parseDuration } from '../duration.js';

function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('expected a whole number >= 1');
  return n;
}

function duration(value: string): number {
  try {
    return parseDuration(/^\d+$/.test(value) ? Number(value) : value, 'duration');
  } catch (err) {
    throw new InvalidArgumentError(err instanceof Error ? err.message : String(err));
  }
}

const program = new Command()
  .name('delayq')
  .description('Delayed job queue on Redis: run this at time T, exactly once at a time, nothing lost.')
  .showHelpAfterError()
  .exitOverride((err) => {
    // Usage errors exit 2; help and version exit 0.
    process.exit(err.exitCode === 0 ? 0 : 2);
  });

program
  .command('demo')
  .description('schedule jobs with delays on a local Redis and run them, printing each with its lateness')
  .option('--jobs <n>', 'how many jobs', positiveInt, 20)
  .option('--span <duration>', 'spread due times over this long', duration, 10_000)
  .option('--concurrency <n>', 'handlers at once', positiveInt, 10)
  .option('--fail-every <n>', 'every n-th job fails its first attempt (0: none)', (v) => Number(v), 7)
  .action(async (opts: { jobs: number; span: number; concurrency: number; failEvery: number }) => {
    await runDemo({
      jobs: opts.jobs,
      spanMs: opts.span,
      concurrency: opts.concurrency,
      failEvery: opts.failEvery,
      out: (line) => console.log(line),
    });
  });

try {
  await program.parseAsync(process.argv);
} catch (err) {
  console.error(`delayq: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
}
