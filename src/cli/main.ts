#!/usr/bin/env node
/**
 * The `delayq` command. Exit codes: 0 success, 1 operational error (Redis unreachable, no such job,
 * ...), 2 usage error; every failure prints one line on stderr.
 */
import { createRequire } from 'node:module';
import { Command, CommanderError } from 'commander';
import { DelayqError, ValidationError } from '../errors.js';
import { registerAdd } from './add.js';
import { OperationalError, UsageError } from './context.js';
import { registerDashboard } from './dashboard.js';
import { registerDemo } from './demo.js';
import { registerLs } from './ls.js';
import { registerManage } from './manage.js';
import { registerMigrate } from './migrate.js';
import { registerRepartition } from './repartition.js';
import { registerSearch } from './search.js';
import { registerShow } from './show.js';
import { registerStats } from './stats.js';
import { registerWorker } from './worker.js';

// The package's own manifest: two directories up from src/cli/ and from dist/cli/ alike.
const { version } = createRequire(import.meta.url)('../../package.json') as { version: string };

const program = new Command()
  .name('delayq')
  .description('Delayed job queue on Redis: run this at time T, exactly once at a time, nothing lost.')
  .version(version, '-V, --version', 'print the version of delayq')
  .option('--redis <url>', 'Redis URL (default REDIS_URL, then redis://127.0.0.1:6379)')
  .option('--json', 'machine-readable output: one JSON document per line')
  .option('--no-color', 'no colours even on a terminal')
  .option(
    '--codec-module <file>',
    'module exporting the codec of queues whose codec is not built in (protobuf, custom): export default protobufCodec(MySchema)',
  )
  .configureOutput({
    // One line per failure, like every other error of the CLI.
    outputError: (text, write) => write(`delayq: ${text.replace(/^error: /, '').trimEnd()} (see --help)\n`),
  })
  .exitOverride();

registerStats(program);
registerLs(program);
registerSearch(program);
registerShow(program);
registerAdd(program);
registerManage(program);
registerWorker(program);
registerDashboard(program);
registerDemo(program);
registerMigrate(program);
registerRepartition(program);
for (const command of program.commands) command.exitOverride();

/** The exit code for `err`, after printing its one line. */
function fail(err: unknown): number {
  if (err instanceof CommanderError) {
    // Commander already printed its message (and help hint); help and version are not failures.
    return err.exitCode === 0 || err.code === 'commander.helpDisplayed' || err.code === 'commander.version'
      ? 0
      : 2;
  }
  const message = err instanceof Error ? err.message.split('\n')[0]! : String(err);
  process.stderr.write(`delayq: ${message}\n`);
  if (err instanceof UsageError || err instanceof ValidationError) return 2;
  if (err instanceof OperationalError || err instanceof DelayqError) return 1;
  return 1;
}

let code = 0;
try {
  await program.parseAsync(process.argv);
} catch (err) {
  code = fail(err);
}
process.exit(code);
