/**
 * A queue as one client sees it once settled with Redis: its definition checked against the
 * queue's config record (written by the first client), and what follows from both — the layout,
 * the claim strategy, the events cap, the codec. Queue, Worker, Scheduler, the CLI and the
 * dashboard all go through here, so no two of them can resolve a queue differently.
 */
import { ServerClock } from '../clock.js';
import type { Codec } from '../codec/codec.js';
import { ConfigMismatchError } from '../errors.js';
import { eventsCapFor } from '../events.js';
import { settleConfig } from '../operations/config.js';
import {
  CONFIG_FORMAT,
  LIVE_FIELDS,
  readLiveSettings,
  type ConfigRecord,
  type LiveSettings,
} from '../operations/config-record.js';
import { layoutName, ZSET_LAYOUT, type Layout } from '../operations/wheel.js';
import { partitionOf } from '../partition/index.js';
import {
  chooseStrategy,
  probeCapabilities,
  type Capabilities,
  type Strategy,
} from '../redis/capabilities.js';
import type { RedisClient } from '../redis/connection.js';
import { partitionKeys, type QueueKeys } from '../redis/keys.js';
import { ServerTimeBound } from '../server-time-bound.js';
import { builtinCodec } from './codecs.js';
import { groupsRecordValues, type QueueDefinition } from './definition.js';
import { describeLive } from './settings.js';
import { whenReachable } from './reach.js';

/** How often a producer reads the live settings again while it adds grouped jobs. */
const LIVE_REFRESH_MS = 1_000;

/** What a settled queue is, for this client. */
export interface Settled {
  readonly record: ConfigRecord;
  readonly layout: Layout;
  /** The claim strategy: 'wheel' for a wheel queue, else what `strategy` (or the probe) chose. */
  readonly strategy: Strategy;
  readonly eventsCap: number;
  readonly codec: Codec;
  readonly caps: Capabilities;
}

/** One client's view of one queue: its keys at once, the rest after settle(). */
export class QueueContext {
  /**
   * The keys of every partition, partition i at index i: one array for the client's life, grown in
   * place to the recorded count (settle, follow) so every part holding it sees the new partitions.
   */
  readonly partitions: readonly QueueKeys[];
  /**
   * The count a job whose id or group the user chose is placed by (ConfigRecord.partitionsBase):
   * the recorded one once settled.
   */
  partitionsBase: number;
  /** The keys of the first partition (with one partition, all of them). */
  keys: QueueKeys;
  /** What add replies taught about the server's clock, partition i at index i (delays count from the call). */
  readonly serverTimes: readonly ServerTimeBound[];
  private settling: Promise<Settled> | undefined;
  /** 'read' for views (the CLI's and dashboard's Inspector): never write the config record. */
  private mode: 'read' | 'write' = 'write';
  /** Where warnings go (a Worker sets its logger's warn); by default process warnings. */
  warn: (message: string) => void = (message) => process.emitWarning(message, 'DelayqWarning');
  /** The warnings given once already (a re-settle after a failure does not repeat them). */
  private readonly warned = new Set<string>();
  /** When refreshLiveSoon() last read the live settings (Date.now()), and whether it is reading. */
  private liveReadAt = Date.now();
  private liveReading = false;

  constructor(
    readonly client: RedisClient,
    readonly definition: QueueDefinition,
    /** The server clock as seen in replies; a wheel layout guesses buckets from it. */
    readonly clock: ServerClock = new ServerClock(),
    /**
     * true: an unreachable server fails settle() at once with ConnectionError (a producer's call
     * should not hang). false: wait for it (a worker started before its Redis must outlive that).
     */
    private readonly failFast = true,
  ) {
    this.partitions = partitionKeys(definition.name, definition.partitions);
    this.partitionsBase = definition.partitions;
    this.keys = this.partitions[0]!;
    this.serverTimes = this.partitions.map(() => new ServerTimeBound());
  }

  /**
   * Follow a larger recorded count (a re-partition, repartition.lua): the new partitions' keys are
   * appended, the old ones stay (their jobs never move). True when the count grew; a smaller one
   * is never adopted (no re-partition shrinks a queue).
   */
  grow(count: number, base: number): boolean {
    this.partitionsBase = base;
    const partitions = this.partitions as QueueKeys[];
    const target = Math.max(count, partitions.length);
    const all = partitionKeys(this.name, target, base);
    // Partition 0 of a queue grown from one partition is the queue's own keys, which a client
    // opened with the grown count did not know before it read the record.
    partitions[0] = all[0]!;
    this.keys = all[0]!;
    if (count <= partitions.length) return false;
    for (let p = partitions.length; p < count; p++) {
      partitions.push(all[p]!);
      (this.serverTimes as ServerTimeBound[]).push(new ServerTimeBound());
    }
    return true;
  }

  get name(): string {
    return this.definition.name;
  }

  /**
   * Run `op` on the partition of job `id` and, when it finds nothing there (null) and the queue
   * has partitions, on the others at once: a grouped job lives in its group's partition
   * (docs/ARCHITECTURE.md §9), which an id alone does not tell. The first partition's answer
   * that is not null wins, in partition order.
   */
  async findById<R>(id: string, op: (keys: QueueKeys) => Promise<R | null>): Promise<R | null> {
    // Settled first: the recorded counts say where the id is placed and how many partitions to ask.
    await this.settle();
    // An id the user chose is placed by the base count; a generated one by the count when it was
    // added, which is why the others are asked too.
    const home = partitionOf(id, this.partitionsBase);
    const found = await op(this.partitions[home]!);
    if (found !== null || this.partitions.length === 1) return found;
    const others = await Promise.all(
      this.partitions.map((keys, p) => (p === home ? Promise.resolve(null) : op(keys))),
    );
    return others.find((answer) => answer !== null) ?? null;
  }

  /**
   * Take the live settings now recorded (after queue.configure, or a `G` wake message) into this
   * client's settled view; the fixed fields cannot have changed. Returns the record as it is now.
   */
  async adoptLive(live: LiveSettings): Promise<ConfigRecord> {
    const settled = await this.settle();
    this.grow(live.partitions, live.partitionsBase);
    const record: ConfigRecord = {
      ...settled.record,
      groups: live.groups,
      settingsVersion: live.settingsVersion,
      partitions: Math.max(live.partitions, settled.record.partitions),
      partitionsBase: live.partitionsBase,
    };
    this.settling = Promise.resolve({ ...settled, record });
    return record;
  }

  /**
   * @internal While a producer writes jobs: read the live settings again in the background, at
   * most once a second, so the group bound its adds pass follows queue.configure() and its
   * partition count a re-partition (a Queue hears no wake messages). The claim enforces the bound
   * whatever a producer passes; a stale one can only keep a raised group's new slots idle until
   * one of its jobs ends. A stale count only keeps new jobs off the new partitions a while.
   */
  refreshLiveSoon(): void {
    const now = Date.now();
    if (this.liveReading || now - this.liveReadAt < LIVE_REFRESH_MS) return;
    this.liveReading = true;
    this.liveReadAt = now;
    readLiveSettings(this.client, this.name)
      .then((live) => this.adoptLive(live))
      .catch(() => {
        // A failed read is tried again a second later; the bound in hand stays.
      })
      .finally(() => {
        this.liveReading = false;
      });
  }

  /** @internal Make this a view's context: settle() reads the record and never writes it. */
  readOnly(): void {
    this.mode = 'read';
  }

  /**
   * Once per client: reach the server, probe it, and record this definition or check it against
   * the record. A failure is not kept, so the next call tries again (and a mismatch fails again).
   */
  settle(): Promise<Settled> {
    this.settling ??= this.run().catch((err: unknown) => {
      this.settling = undefined;
      throw err;
    });
    return this.settling;
  }

  private async run(): Promise<Settled> {
    const d = this.definition;
    if (this.failFast) await whenReachable(this.client);
    const caps = await probeCapabilities(this.client);
    // The server is checked (scripting, an explicit strategy's commands) before any script runs.
    const probed = chooseStrategy(d.strategy, caps);
    const explicit = d.strategy === 'auto' ? null : probed;
    const wantedLayout =
      explicit === null ? '' : explicit === 'wheel' ? `wheel:${d.granularityMs}` : layoutName(ZSET_LAYOUT);
    const initial = {
      partitions: String(d.partitions),
      layout: layoutName(ZSET_LAYOUT),
      codec: 'json',
      events: String(eventsCapFor(undefined, caps)),
    };
    const settled = await settleConfig(this.client, d.name, {
      mode: this.mode,
      partitions: { wanted: String(d.partitions), initial: initial.partitions },
      layout: { wanted: wantedLayout, initial: initial.layout },
      codec: { wanted: d.codec?.name ?? '', initial: initial.codec },
      events: {
        wanted: d.events === undefined ? '' : String(eventsCapFor(d.events, caps)),
        initial: initial.events,
      },
      version: d.version,
      groups: groupsRecordValues(d.groups),
    });
    // Only read mode finds nothing: a view of a queue nothing has opened yet sees it empty, as a
    // new queue would be, and records nothing.
    const record: ConfigRecord = settled?.record ?? {
      format: CONFIG_FORMAT,
      layout: wantedLayout || initial.layout,
      partitions: d.partitions,
      partitionsBase: d.partitions,
      codec: d.codec?.name ?? initial.codec,
      events: Number(initial.events),
      version: null,
      groups: d.groups,
      settingsVersion: 0,
    };
    if (settled) this.warnIfAdopted(settled.record);
    // A re-partitioned queue: this client adopts the recorded count (config.lua let it through).
    this.grow(record.partitions, record.partitionsBase);
    if (settled) this.clock.observe(settled.now);
    const wheel = /^wheel:(\d+)$/.exec(record.layout);
    const layout: Layout = wheel
      ? { kind: 'wheel', granularityMs: Number(wheel[1]), clock: this.clock }
      : ZSET_LAYOUT;
    const strategy = wheel ? chooseStrategy('wheel', caps) : probed;
    return { record, layout, strategy, eventsCap: record.events, codec: this.codecFor(record), caps };
  }

  /**
   * A live setting this client set differently from the record: the record wins (one bound for
   * every worker), and the client is told once how to change it.
   */
  private warnIfAdopted(record: ConfigRecord): void {
    const own = groupsRecordValues(this.definition.groups);
    const recorded = groupsRecordValues(record.groups);
    for (const field of LIVE_FIELDS) {
      const key = field === 'groups.concurrency' ? 'concurrency' : 'limit';
      const mine = own[key];
      const theirs = recorded[key];
      // An option left out adopts silently; a limit left out while one is recorded too.
      if (mine === '' || theirs === '' || mine === theirs) continue;
      if (key === 'limit' && this.definition.groups?.limit === null) continue;
      const warning = `${field}: ${describeLive(field, mine)}`;
      if (this.warned.has(warning)) continue;
      this.warned.add(warning);
      this.warn(
        `queue '${this.name}' records ${field}: ${describeLive(field, theirs)}, which this client uses instead of its own ${warning}; the recorded bound holds across all workers. To change it on the running queue call queue.configure({ groups: { ${key}: ... } }) (workers follow within about a second)`,
      );
    }
  }

  /** This client's codec, or the recorded one when this client left it out and it is built in. */
  private codecFor(record: ConfigRecord): Codec {
    const own = this.definition.codec;
    if (own) return own;
    const builtin = builtinCodec(record.codec);
    if (builtin) return builtin;
    throw new ConfigMismatchError(
      this.name,
      'codec',
      record.codec,
      'none given',
      `queue '${this.name}' records codec '${record.codec}', which is not built in: pass that codec as the codec option`,
    );
  }
}
