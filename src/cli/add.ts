/**
 * `delayq add <queue> <json> [--delay|--run-at] [--id] [--attempts] [--on-exists keep|replace]`, or
 * `--file jobs.ndjson` for many: one job spec per line, `{"payload": ..., "delay"?: "10s", "runAt"?:
 * ISO or ms, "id"?: ..., "attempts"?: n, "onExists"?: "keep" | "replace"}`.
 * Flags and fields are named as add's options (runAt, not at).
 */
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { Option, type Command } from 'commander';
import type { Duration } from '../duration.js';
import type { AddOptions, OnExists } from '../job-options.js';
import type { BulkJob, Queue } from '../queue.js';
import {
  dateArg,
  durationArg,
  globalsOf,
  intArg,
  OperationalError,
  output,
  RUN_AT_RENAMED,
  UsageError,
  withQueue,
} from './context.js';
import { relative } from './format.js';
import { progress } from './progress.js';
import { serverNow } from '../inspect/discover.js';

/** Jobs per addBulk call when reading a file. */
const FILE_BATCH = 1_000;

interface AddFlags {
  delay?: number;
  runAt?: Date;
  /** The 0.1 spelling of --run-at, refused. */
  at?: unknown;
  id?: string;
  attempts?: number;
  onExists?: OnExists;
  file?: string;
}

export function registerAdd(program: Command): void {
  program
    .command('add <queue> [json]')
    .description('schedule a job whose payload is <json>, or every job of an NDJSON file (--file)')
    .option('--delay <duration>', "run after this long ('90s', '1h30m', ms)", durationArg)
    .option('--run-at <date>', 'run at this time (ISO 8601 or epoch ms)', dateArg)
    .addOption(new Option('--at <date>').hideHelp())
    .option('--id <id>', 'job id; adding an existing id changes nothing')
    .option('--attempts <n>', 'attempts before the dead set', intArg(1))
    .addOption(
      new Option(
        '--on-exists <mode>',
        "when the id exists: 'keep' it (default) or 'replace' a waiting job's payload, time and options (debounce)",
      ).choices(['keep', 'replace']),
    )
    .option(
      '--file <path>',
      'NDJSON file, one {"payload", "delay"?, "runAt"?, "id"?, "attempts"?, "onExists"?} per line',
    )
    .action(async (name: string, json: string | undefined, flags: AddFlags, command: Command) => {
      const globals = globalsOf(command);
      const out = output(globals);
      if (flags.at !== undefined) throw new UsageError(RUN_AT_RENAMED);
      if (flags.delay !== undefined && flags.runAt !== undefined)
        throw new UsageError('give --delay or --run-at, not both');
      if ((json === undefined) === (flags.file === undefined)) {
        throw new UsageError('give either a JSON payload or --file <ndjson>');
      }
      if (flags.file !== undefined) {
        if (flags.id !== undefined) throw new UsageError('--id applies to one job; put ids in the file');
        const file = flags.file;
        await withQueue(
          globals,
          name,
          (inspector) => {
            inspector.assertCodec();
            return addFile(inspector.queue, file, flags, out);
          },
          { create: true },
        );
        return;
      }
      const payload = parseJson(json!, 'the payload');
      const opts: AddOptions = {};
      if (flags.delay !== undefined) opts.delay = flags.delay;
      if (flags.runAt !== undefined) opts.runAt = flags.runAt;
      if (flags.id !== undefined) opts.id = flags.id;
      if (flags.attempts !== undefined) opts.attempts = flags.attempts;
      if (flags.onExists !== undefined) opts.onExists = flags.onExists;
      await withQueue(
        globals,
        name,
        async (inspector, client) => {
          // A codec the CLI cannot load is refused before anything is encoded, never guessed at.
          inspector.assertCodec();
          const result = await inspector.queue.add(payload, opts);
          const now = await serverNow(client);
          out.data({
            queue: name,
            id: result.id,
            runAt: result.runAt.toISOString(),
            created: result.created,
            ...(result.replaced !== undefined && { replaced: result.replaced }),
            ...(result.state !== undefined && { state: result.state }),
          });
          if (result.state !== undefined) {
            // A replace left a running, dead or completed job alone: say so, not a due time.
            out.line(`${out.c.yellow('exists')} ${result.id}  ${result.state}: nothing replaced`);
            return;
          }
          const verb = result.created
            ? out.c.green('added')
            : result.replaced
              ? out.c.green('replaced')
              : out.c.yellow('exists');
          out.line(
            `${verb} ${result.id}  due ${result.runAt.toISOString()} (${relative(result.runAt.getTime(), now)})`,
          );
        },
        { create: true },
      );
    });
}

function parseJson(text: string, what: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new UsageError(`${what} is not JSON: ${(err as Error).message}`);
  }
}

/** A file line as a job; throws UsageError naming the line. */
function lineJob(line: string, n: number, defaults: AddFlags): BulkJob<unknown> {
  const spec = parseJson(line, `line ${n}`);
  if (typeof spec !== 'object' || spec === null || Array.isArray(spec) || !('payload' in spec)) {
    throw new UsageError(`line ${n}: expected an object with a "payload" field`);
  }
  const s = spec as {
    payload: unknown;
    delay?: unknown;
    runAt?: unknown;
    at?: unknown;
    id?: unknown;
    attempts?: unknown;
    onExists?: unknown;
  };
  if (s.at !== undefined) throw new UsageError(`line ${n}: "at" is now "runAt", as add's runAt option`);
  const opts: AddOptions = {};
  if (s.delay !== undefined) opts.delay = s.delay as Duration;
  else if (s.runAt !== undefined)
    opts.runAt = typeof s.runAt === 'string' ? new Date(s.runAt) : (s.runAt as number);
  else if (defaults.delay !== undefined) opts.delay = defaults.delay;
  else if (defaults.runAt !== undefined) opts.runAt = defaults.runAt;
  if (s.id !== undefined) opts.id = s.id as string;
  if (s.attempts !== undefined) opts.attempts = s.attempts as number;
  else if (defaults.attempts !== undefined) opts.attempts = defaults.attempts;
  if (s.onExists !== undefined) opts.onExists = s.onExists as OnExists;
  else if (defaults.onExists !== undefined) opts.onExists = defaults.onExists;
  return { payload: s.payload, opts };
}

async function addFile(
  queue: Queue,
  path: string,
  defaults: AddFlags,
  out: ReturnType<typeof output>,
): Promise<void> {
  let size: number;
  try {
    size = (await stat(path)).size;
  } catch (err) {
    throw new OperationalError(`cannot read ${path}: ${(err as Error).message}`);
  }
  const stream = createReadStream(path);
  const lines = createInterface({ input: stream, crlfDelay: Infinity });
  const bar = progress(`adding to ${queue.name}`, size, out.json);
  let batch: Array<BulkJob<unknown>> = [];
  let n = 0;
  let added = 0;
  let existed = 0;
  let replaced = 0;
  const flush = async (): Promise<void> => {
    if (batch.length === 0) return;
    let results;
    try {
      results = await queue.addBulk(batch);
    } catch (err) {
      // A job the queue refuses (bad delay, too large) is the file's fault: a usage error naming the batch.
      throw new UsageError(`${path}, lines ${n - batch.length + 1}-${n}: ${(err as Error).message}`);
    }
    batch = [];
    for (const r of results) {
      if (r.created) added++;
      else if (r.replaced) replaced++;
      else existed++;
    }
    bar.update(stream.bytesRead);
  };
  try {
    for await (const line of lines) {
      n++;
      if (line.trim() === '') continue;
      batch.push(lineJob(line, n, defaults));
      if (batch.length >= FILE_BATCH) await flush();
    }
    await flush();
  } finally {
    bar.finish();
    stream.destroy();
  }
  out.data({ queue: queue.name, added, existed, ...(replaced > 0 && { replaced }) });
  out.line(
    `${out.c.green('added')} ${added} jobs to ${queue.name}${replaced ? `, replaced ${replaced}` : ''}${existed ? ` (${existed} ids already existed)` : ''}`,
  );
}
