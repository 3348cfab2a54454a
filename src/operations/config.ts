/**
 * The `config` operation (config.lua): record a queue's definition at its first use, or check a
 * client's against the record (config-record.ts), refusing with an error that names both values.
 */
import {
  ConfigMismatchError,
  LayoutMismatchError,
  PartitionMismatchError,
  UnsupportedLayoutError,
} from '../errors.js';
import type { RedisClient } from '../redis/connection.js';
import { configKey, legacyKeys } from '../redis/keys.js';
import { ScriptConfigMismatch, ScriptMigrating } from '../redis/script-errors.js';
import { runScript, script } from '../redis/scripts.js';
import { describeEvents } from '../events.js';
import {
  CONFIG_FORMAT,
  LEGACY_FORMAT,
  parseGroups,
  SETTINGS_VERSION_FIELD,
  type ConfigRecord,
} from './config-record.js';
import { asArray, num, str } from './reply.js';

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
      partitionsBase: Number(values.get('partitions.base') ?? values.get('partitions') ?? 1),
      codec: values.get('codec') ?? 'json',
      events: Number(values.get('events') ?? 0),
      version: version === undefined ? null : Number(version),
      groups: parseGroups(values.get('groups.concurrency'), values.get('groups.limit')),
      settingsVersion: Number(values.get(SETTINGS_VERSION_FIELD) ?? 0),
    },
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
