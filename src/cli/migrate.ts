/**
 * `delayq migrate <queue> [--dry-run] [--yes] [--resume]`: convert a queue written by delayq 0.1
 * (layout 1) to layout 2 in place (src/migrate/, docs/ARCHITECTURE.md §10), printing progress.
 */
import { hostname } from 'node:os';
import type { Command } from 'commander';
import { codecNamed } from '../definition/codecs.js';
import { migrateQueue, type MigrateProgress, type MigrateReport } from '../migrate/migrate.js';
import { migrationCodec } from '../migrate/codecs.js';
import { payloadConverter, templateConverter } from '../migrate/payloads.js';
import { configKey } from '../redis/keys.js';
import { CODEC_HINT, loadCodecModule } from './codec-module.js';
import { connect, globalsOf, intArg, OperationalError, output, redisUrl, type Output } from './context.js';

interface MigrateFlags {
  dryRun?: boolean;
  yes?: boolean;
  resume?: boolean;
  chunk: number;
}

export function registerMigrate(program: Command): void {
  program
    .command('migrate <queue>')
    .description(
      "convert a queue written by delayq 0.1 (layout 1) to this version's layout, in place; stop its 0.1 workers and producers first",
    )
    .option('--dry-run', 'read and convert every job, write nothing: what a migration would do')
    .option('--yes', 'go on although a 0.1 client seems to use the queue (a running job, a recent event)')
    .option('--resume', 'take over a migration that stopped (its mark in the config record stays)')
    .option('--chunk <n>', 'jobs per script call (1-10000)', intArg(1), 500)
    .action(async (name: string, flags: MigrateFlags, command: Command) => {
      const globals = globalsOf(command);
      const out = output(globals);
      const codecs = await loadCodecModule(globals.codecModule);
      const client = await connect(redisUrl(globals));
      try {
        const recorded = (await client.hget(configKey(name), 'codec')) ?? 'json';
        const codec = codecNamed(recorded, codecs);
        if (codec === undefined) {
          throw new OperationalError(
            `queue '${name}' records codec '${recorded}', which is not loaded here: ${CODEC_HINT}`,
          );
        }
        const { envelopes, payloads } = migrationCodec(codec);
        const report = await migrateQueue(client, name, {
          who: `delayq migrate on ${hostname()} (pid ${process.pid})`,
          resume: flags.resume === true,
          dryRun: flags.dryRun === true,
          yes: flags.yes === true,
          chunk: Math.min(flags.chunk, 10_000),
          payloads: payloadConverter(envelopes, payloads),
          templates: templateConverter(envelopes, payloads),
          onProgress: progressPrinter(out),
        });
        printReport(out, name, report);
      } finally {
        await client.quit().catch(() => client.disconnect());
      }
    });
}

/** One line per partition and phase, then one per chunk only when at least a second has passed. */
function progressPrinter(out: Output): (p: MigrateProgress) => void {
  let last = '';
  let printedAt = 0;
  return (p) => {
    const where = p.partitions > 1 ? `partition ${p.partition + 1}/${p.partitions}, ` : '';
    const step = `${where}${p.phase}`;
    const now = Date.now();
    if (step === last && now - printedAt < 1_000) return;
    last = step;
    printedAt = now;
    out.note(`${step}: ${p.done} / ${p.total} jobs`);
  };
}

function printReport(out: Output, name: string, report: MigrateReport): void {
  out.data({ queue: name, ...report });
  if (report.status === 'already') {
    out.line(`queue '${name}' is in layout 2 already: nothing to do`);
    return;
  }
  const { jobs } = report;
  const verb = report.status === 'dry-run' ? 'would convert' : 'converted';
  out.line(
    `${verb} queue '${name}' (${report.partitions} partition${report.partitions === 1 ? '' : 's'}): ${jobs.waiting} waiting, ${jobs.active} active, ${jobs.dead} dead, ${jobs.completed} completed, ${jobs.cancelled} cancelled; ${report.schedules.converted} schedule${report.schedules.converted === 1 ? '' : 's'}`,
  );
  for (const p of report.problems.slice(0, 20)) out.line(`  buried ${p.id}: ${p.reason}`);
  if (report.problems.length > 20) out.line(`  ... and ${report.problems.length - 20} more buried`);
  for (const p of report.schedules.problems) out.line(`  schedule ${p.name} left as it was: ${p.reason}`);
}
