/**
 * What every command shares: the global options, the Redis connection (failing fast with one line
 * instead of retrying forever), output in text or JSON, and the two error kinds that map to exit
 * codes 1 (operational) and 2 (usage).
 */
import { InvalidArgumentError, type Command } from 'commander';
import { Redis } from 'ioredis';
import { Inspector } from '../inspect/inspector.js';
import { parseDuration } from '../duration.js';
import { colors, type Colors } from './format.js';
import { CODEC_HINT, loadCodecModule } from './codec-module.js';

/** Exit code 2: the command line was wrong. */
export class UsageError extends Error {}

/** The 0.1 flag --at, refused: flags are named as add's options. */
export const RUN_AT_RENAMED = "--at is now --run-at, as add's runAt option";

/** Exit code 1: the command was fine but could not be carried out. */
export class OperationalError extends Error {}

/** Options every command accepts. */
export interface GlobalOptions {
  redis?: string;
  json?: boolean;
  color?: boolean;
  /** A module exporting codecs beyond json and msgpack (src/cli/codec-module.ts). */
  codecModule?: string;
}

/** Where a command writes, and how. */
export interface Output {
  readonly json: boolean;
  readonly c: Colors;
  /** A line for people (suppressed in --json mode). */
  line(text: string): void;
  /** The machine-readable result (printed only in --json mode, as one JSON line). */
  data(value: unknown): void;
  /** A note on stderr (both modes). */
  note(text: string): void;
}

/** The Redis URL: --redis, else REDIS_URL, else the local default. */
export function redisUrl(globals: GlobalOptions): string {
  const url = globals.redis ?? process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379';
  if (!/^rediss?:\/\//.test(url))
    throw new UsageError(`--redis must be a redis:// or rediss:// URL, got ${url}`);
  return url;
}

/** The output of a command given its global options. */
export function output(globals: GlobalOptions): Output {
  const json = globals.json === true;
  const c = colors(globals.color !== false && process.stdout.isTTY === true);
  return {
    json,
    c,
    line: (text) => {
      if (!json) process.stdout.write(`${text}\n`);
    },
    data: (value) => {
      if (json) process.stdout.write(`${JSON.stringify(value)}\n`);
    },
    note: (text) => process.stderr.write(`${text}\n`),
  };
}

/** The global options as seen from a subcommand. */
export function globalsOf(command: Command): GlobalOptions {
  return command.optsWithGlobals<GlobalOptions>();
}

/** Connect to Redis, or fail within a few seconds with a one-line OperationalError. */
export async function connect(url: string): Promise<Redis> {
  let lastError: Error | undefined;
  const client = new Redis(url, {
    lazyConnect: true,
    connectTimeout: 3_000,
    maxRetriesPerRequest: 1,
    retryStrategy: (times) => (times > 2 ? null : 200),
  });
  client.on('error', (err: Error) => {
    lastError = err;
  });
  try {
    await client.connect();
  } catch (err) {
    client.disconnect();
    const reason = (lastError ?? (err as Error)).message;
    throw new OperationalError(`cannot reach Redis at ${redactUrl(url)}: ${reason}`);
  }
  return client;
}

/** The URL without its password, for messages. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString().replace(/\/$/, '');
  } catch {
    return url;
  }
}

/**
 * Run `fn` with queue `name` opened by its config record (exit 1 when there is no such queue,
 * unless `create`) on a fresh connection, closing both afterwards.
 */
export async function withQueue<R>(
  globals: GlobalOptions,
  name: string,
  fn: (inspector: Inspector, client: Redis) => Promise<R>,
  { create = false } = {},
): Promise<R> {
  const codecs = await loadCodecModule(globals.codecModule);
  const client = await connect(redisUrl(globals));
  try {
    const inspector = await Inspector.open(client, name, {
      codecs,
      codecHint: CODEC_HINT,
      unknown: create ? 'create' : 'fail',
    });
    try {
      return await fn(inspector, client);
    } finally {
      await inspector.close();
    }
  } finally {
    await client.quit().catch(() => client.disconnect());
  }
}

/** Commander parser for a duration option ('90s', '1h30m', or ms). */
export function durationArg(value: string): number {
  try {
    return parseDuration(/^\d+$/.test(value) ? Number(value) : value, 'duration');
  } catch (err) {
    throw new InvalidArgumentError(err instanceof Error ? err.message : String(err));
  }
}

/** Commander parser for a whole number >= min. */
export function intArg(min: number): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (!/^\d+$/.test(value.trim()) || !Number.isInteger(n) || n < min) {
      throw new InvalidArgumentError(`expected a whole number >= ${min}`);
    }
    return n;
  };
}

/** Commander parser for a date: ISO 8601 or epoch ms. */
export function dateArg(value: string): Date {
  const date = /^\d+$/.test(value) ? new Date(Number(value)) : new Date(value);
  if (Number.isNaN(date.getTime())) throw new InvalidArgumentError('expected an ISO date or epoch ms');
  return date;
}
