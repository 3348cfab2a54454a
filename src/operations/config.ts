/**
 * The `config` operation (config.lua): record a queue's definition at its first use, or check a
 * client's against the record; and the refusal a wheel-aware script gives when the recorded layout
 * is not the caller's.
 */
import {
  ConfigMismatchError,
  LayoutMismatchError,
  PartitionMismatchError,
  UnsupportedLayoutError,
} from '../errors.js';
import type { RedisClient } from '../redis/connection.js';
import { configKey, legacyKeys } from '../redis/keys.js';
import { ScriptConfigMismatch, ScriptLayoutMismatch, ScriptMigrating } from '../redis/script-errors.js';
import { runScript, script } from '../redis/scripts.js';
import { describeEvents } from '../events.js';
import { asArray, num, str } from './reply.js';
import { layoutName, type Layout } from './wheel.js';

/**
 * The job data layout version this code reads and writes (the record's `format`): 2, one record
 * per job (docs/ARCHITECTURE.md). Layout 1 (delayq 0.1) is converted by `delayq migrate`.
 */
export const CONFIG_FORMAT = 2;

/** The layout delayq 0.1 wrote, which this version refuses until `delayq migrate` converts it. */
export const LEGACY_FORMAT = 1;

/**
 * Fields `queue.configure()` may change: the group bounds. A client whose option differs adopts
 * the recorded value (with a one-time warning naming queue.configure), since the bound must be one
 * across all workers (src/definition/settings.ts).
 */
export const LIVE_FIELDS = ['groups.concurrency', 'groups.limit'] as const;

/** A live field of the config record. */
export type LiveField = (typeof LIVE_FIELDS)[number];

/** The record field counting live-setting changes (configure.lua adds one per change). */
export const SETTINGS_VERSION_FIELD = 'settings.version';

/**
 * The `groups` option after validation (src/definition/): what config.lua records and the claim
 * enforces.
 */
export interface GroupBounds {
  readonly concurrency: number;
  readonly limit: { readonly max: number; readonly perMs: number } | null;
}

/** A queue's config record, as stored in `dq:{q}:config` (docs/PROTOCOL.md). */
export interface ConfigRecord {
  /** Version of the job data layout the queue's keys hold. */
  readonly format: number;
  /** Where waiting jobs live: 'zset' or 'wheel:<granularity ms>'. */
  readonly layout: string;
  readonly partitions: number;
  /** The codec's name ('json', 'msgpack', 'protobuf' or a custom codec's own). */
  readonly codec: string;
  /** Events cap as the scripts take it: 0 off, N keep about N, -N only failures. */
  readonly events: number;
  /** The highest payload version a client of the queue has written or known, if recorded. */
  readonly version: number | null;
  /** The group bounds (live: queue.configure() changes them), or null when none are recorded. */
  readonly groups: GroupBounds | null;
  /** How many times the live settings were changed (configure.lua); 0 when never. */
  readonly settingsVersion: number;
}

/** One field a client brings: its value ('' adopts the recorded one) and the value for a new queue. */
export interface ConfigField {
  readonly wanted: string;
  readonly initial: string;
}

/** What a client asks config.lua for. */
export interface ConfigRequest {
  /** 'read' never writes (views); 'write' records what is missing. */
  readonly mode: 'read' | 'write';
  readonly partitions: ConfigField;
  readonly layout: ConfigField;
  readonly codec: ConfigField;
  readonly events: ConfigField;
  /** The payload version this client writes or knows, or null. */
  readonly version: number | null;
  /** The group bounds this client sets ('' each: adopt the recorded ones). */
  readonly groups?: { concurrency: string; limit: string };
}

/**
 * The record of queue `queue` after settling `request` with it, and the server's now; null in read
 * mode for a queue with neither a record nor jobs. Throws PartitionMismatchError,
 * LayoutMismatchError or ConfigMismatchError (naming both values) when the client's differ, and
 * UnsupportedLayoutError for a layout-1 queue or one being migrated, having written nothing.
 */
export async function settleConfig(
  client: RedisClient,
  queue: string,
  request: ConfigRequest,
): Promise<{ record: ConfigRecord; now: number } | null> {
  const old = legacyKeys(queue);
  const fields = [request.partitions, request.layout, request.codec, request.events];
  let reply;
  try {
    reply = asArray(
      await runScript(
        client,
        script('config'),
        [configKey(queue), old.layout, old.partitions, old.schedule, old.active, old.dead],
        [
          request.mode,
          CONFIG_FORMAT,
          ...fields.flatMap((f) => [f.wanted, f.initial]),
          request.version === null ? '' : request.version,
          request.groups?.concurrency ?? '',
          request.groups?.limit ?? '',
        ],
      ),
      'config',
    );
  } catch (err) {
    throw mismatch(err, queue, request);
  }
  const now = num(reply, 1, 'config');
  if (num(reply, 0, 'config') === 0) return null;
  const values = new Map<string, string>();
  for (let i = 2; i + 1 < reply.length; i += 2)
    values.set(str(reply, i, 'config'), str(reply, i + 1, 'config'));
  const version = values.get('version');
  return {
    now,
    record: {
      format: Number(values.get('format')),
      layout: values.get('layout') ?? 'zset',
      partitions: Number(values.get('partitions') ?? 1),
      codec: values.get('codec') ?? 'json',
      events: Number(values.get('events') ?? 0),
      version: version === undefined ? null : Number(version),
      groups: parseGroups(values.get('groups.concurrency'), values.get('groups.limit')),
      settingsVersion: Number(values.get(SETTINGS_VERSION_FIELD) ?? 0),
    },
  };
}

/**
 * Write the live fields `fields` of queue `queue`'s record in one step (configure.lua); returns
 * the record's new settings version. Throws UnsupportedLayoutError while the queue is migrated.
 */
export async function writeLiveSettings(
  client: RedisClient,
  queue: string,
  fields: Partial<Record<LiveField, string>>,
): Promise<number> {
  try {
    const reply = await runScript(
      client,
      script('configure'),
      [configKey(queue)],
      Object.entries(fields).flat(),
    );
    return typeof reply === 'number' ? reply : Number(reply);
  } catch (err) {
    if (err instanceof ScriptMigrating) {
      throw new UnsupportedLayoutError(queue, LEGACY_FORMAT, { since: err.since, by: err.by });
    }
    throw err;
  }
}

/** The live settings of queue `queue` as recorded now: its group bounds and settings version. */
export async function readLiveSettings(
  client: RedisClient,
  queue: string,
): Promise<{ groups: GroupBounds | null; settingsVersion: number }> {
  const [concurrency, limit, version] = await client.hmget(
    configKey(queue),
    'groups.concurrency',
    'groups.limit',
    SETTINGS_VERSION_FIELD,
  );
  return {
    groups: parseGroups(concurrency ?? undefined, limit ?? undefined),
    settingsVersion: Number(version ?? 0),
  };
}

/** The recorded group bounds: `groups.concurrency` and `groups.limit` ('<max>/<per ms>' or 'none'). */
function parseGroups(concurrency: string | undefined, limit: string | undefined): GroupBounds | null {
  if (concurrency === undefined) return null;
  const rate = limit === undefined || limit === 'none' ? null : /^(\d+)\/(\d+)$/.exec(limit);
  return {
    concurrency: Number(concurrency),
    limit: rate ? { max: Number(rate[1]), perMs: Number(rate[2]) } : null,
  };
}

/** config.lua's refusal as the error users see, naming `queue`, the field and both values. */
function mismatch(err: unknown, queue: string, request: ConfigRequest): unknown {
  if (err instanceof ScriptMigrating) {
    return new UnsupportedLayoutError(queue, LEGACY_FORMAT, { since: err.since, by: err.by });
  }
  if (!(err instanceof ScriptConfigMismatch)) return err;
  const { field, stored } = err;
  if (field === 'format' && stored === String(LEGACY_FORMAT)) {
    return new UnsupportedLayoutError(queue, LEGACY_FORMAT);
  }
  if (field === 'partitions') {
    return new PartitionMismatchError(queue, Number(stored), Number(request.partitions.wanted));
  }
  if (field === 'layout') return new LayoutMismatchError(queue, stored, request.layout.wanted);
  if (field === 'format') {
    return new ConfigMismatchError(
      queue,
      'format',
      stored,
      CONFIG_FORMAT,
      `queue '${queue}' holds its jobs in data layout format ${stored}, which this version of delayq (format ${CONFIG_FORMAT}) cannot read or write; use the delayq version that wrote it`,
    );
  }
  if (field === 'events') {
    const shown = (cap: string): string => describeEvents(Number(cap));
    return new ConfigMismatchError(queue, 'events', shown(stored), shown(request.events.wanted));
  }
  return new ConfigMismatchError(queue, field, stored, field === 'codec' ? request.codec.wanted : '');
}

/**
 * A script's layout refusal (DELAYQ_LAYOUT_MISMATCH) as the LayoutMismatchError users see, naming
 * `queue` and the layout the caller used; any other error as it came.
 */
export function layoutRefusal(err: unknown, queue: string, wanted: Layout): unknown {
  return err instanceof ScriptLayoutMismatch
    ? new LayoutMismatchError(queue, err.stored, layoutName(wanted))
    : err;
}
