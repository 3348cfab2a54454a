/**
 * The worker's storage operations, each one script wrapper of src/operations/, sent to the
 * partition the job lives in. The attempt machine, the lease keeper, the claim sources and the
 * reaper are given these functions and hold no keys or queries. Acks and claims of a partition go
 * through its Exchange: one script call carries both.
 */
import type { ServerClock } from '../clock.js';
import type { Settled } from '../definition/context.js';
import {
  claimPrepared,
  DEFAULT_GROUP_CONCURRENCY,
  prepareClaim,
  type AckItem,
  type ClaimInput,
  type ClaimOutput,
  type PreparedClaim,
} from '../operations/claim.js';
import { extend, type ExtendOutput } from '../operations/extend.js';
import { fail, type FailOutput } from '../operations/fail.js';
import { progress } from '../operations/progress.js';
import { writeLog } from '../operations/log.js';
import { childResults } from '../operations/child-results.js';
import type { Codec } from '../codec/codec.js';
import { decodeJobPayload } from '../codec/payload.js';
import { reap, type ReapOutput } from '../operations/reap.js';
import { release } from '../operations/release.js';
import { KEEP_CANCELLED, trimAll, type Retention, type TrimOutput } from '../operations/trim.js';
import type { Layout } from '../operations/wheel.js';
import { dropHolder, registerHolder } from '../operations/worker-register.js';
import { hasZmscore } from '../redis/capabilities.js';
import type { RedisClient } from '../redis/connection.js';
import type { QueueKeys } from '../redis/keys.js';
import { partitionOfMember } from '../partition/index.js';
import type {
  AttemptAck,
  AttemptFail,
  AttemptLog,
  AttemptProgress,
  AttemptRelease,
  AttemptStore,
} from './attempt.js';
import { Exchange, type AckListener } from './exchange.js';
import { confirmLateClaim, isLateReply } from './late-claim.js';
import { PROGRESS_MAX_BYTES } from './progress-value.js';
import { CLAIM_AHEAD_MS } from './start-gate.js';

/** How many expired leases one reap call returns at most, per partition. */
const REAP_LIMIT = 1_000;

/** What the operations need besides the job, fixed for the worker's life. */
export interface StorageOptions {
  keepCompleted: Retention;
  deadMaxCount: number;
  deadMaxAgeMs: number;
  /** A claimed job not started: the claim's reply came back after its lease was gone (late-claim.ts). */
  onLateLost?: (id: string) => void;
  /** Told each claim reply's server time with the call's send time (the worker's clock). */
  clock?: Pick<ServerClock, 'observe'>;
  /** Ms until the claim loop claims at a due time, if it sleeps until one: acks that close wait for it. */
  nextClaimWithin?: () => number | undefined;
  /** Whether an ack frees something to claim, and the claim loop's wake for it (ExchangeOptions). */
  freesClaim?: (item: AckItem) => boolean;
  wakeClaim?: () => boolean;
  /** The queue's codec: a flow parent's children's results are decoded with it (childResults). */
  codec?: Codec;
}

/**
 * What every claim of this worker sends besides the limit, the acks and its partition's holder;
 * the layout, events cap, ZMSCORE and group concurrency in it are what the other operations send
 * too. Settled at start-up, with the queue's config record, before the storage is made.
 */
export type ClaimSettings = Omit<ClaimInput, 'limit' | 'acks' | 'buckets' | 'holder'>;

/** The claim settings of a worker with options `o` on the queue as settled at start-up. */
export function claimSettings(
  settled: Settled,
  o: Pick<ClaimSettings, 'leaseMs' | 'deadMaxCount' | 'deadMaxAgeMs' | 'rate'>,
): ClaimSettings {
  const { record } = settled;
  return {
    strategy: settled.strategy,
    layout: settled.layout,
    leaseMs: o.leaseMs,
    deadMaxCount: o.deadMaxCount,
    deadMaxAgeMs: o.deadMaxAgeMs,
    rate: o.rate,
    // The recorded group bounds (this worker's, once recorded or checked); none recorded: 1.
    groups: {
      concurrency: record.groups?.concurrency ?? DEFAULT_GROUP_CONCURRENCY,
      ...(record.groups?.limit && { limit: record.groups.limit }),
    },
    eventsCap: settled.eventsCap,
    zmscore: hasZmscore(settled.caps),
  };
}

/** One worker's operations on its queue. */
export class WorkerStorage implements AttemptStore {
  /** Where waiting jobs live. */
  private readonly layout: Layout;
  /** The events stream's cap (0: none). */
  private readonly eventsCap: number;
  /** The server has ZMSCORE. */
  private readonly zmscore: boolean;
  /** The queue's group concurrency (recorded, or the default; live: setGroups). */
  private groupConcurrency: number;
  /** This worker's holder number in each partition (worker-register), once registered. */
  private holders: number[] = [];
  /** This worker's id, once open() registered it. */
  private workerId: string | undefined;
  private exchanges: Exchange[] = [];
  /** Each partition's claim KEYS and settings ARGV, encoded once (again when the settings change). */
  private prepared: Array<{ now: PreparedClaim; ahead: PreparedClaim }> = [];
  /** The wheel's bucket starts to pass with the next call of each partition (its source sets them). */
  private readonly buckets: Array<readonly number[]> = [];
  /**
   * The partition each held lease was claimed from, by lease member: where its ack, fail, release,
   * extend, progress and log go. Not recomputed from the id and the partition count, which a
   * re-partition changes while the job stays where it was claimed (docs/CLUSTER.md): a fate sent
   * to another partition is refused there, the lease expires, and the job runs a second time.
   */
  private readonly claimedFrom = new Map<string, number>();

  constructor(
    private readonly client: RedisClient,
    /** The keys of each partition (one entry unless `partitions` > 1). */
    private readonly partitions: readonly QueueKeys[],
    private readonly options: StorageOptions,
    /** The claim settings, settled with the queue's config record (the group bounds live: setGroups). */
    private settings: ClaimSettings,
  ) {
    this.layout = settings.layout;
    this.eventsCap = settings.eventsCap;
    this.zmscore = settings.zmscore;
    this.groupConcurrency = settings.groups?.concurrency ?? DEFAULT_GROUP_CONCURRENCY;
  }

  /** Register this worker in every partition (holder numbers) and open the exchanges. */
  async open(workerId: string): Promise<void> {
    this.workerId = workerId;
    await this.grow();
  }

  /**
   * Register in, and open the exchanges of, the partitions not opened yet: at open, and when the
   * queue was re-partitioned (the partition list, shared with the queue's context, grew). A
   * partition is claimed from only once its exchange is open.
   */
  async grow(): Promise<void> {
    const workerId = this.workerId;
    if (workerId === undefined) return;
    const from = this.exchanges.length;
    const added = this.partitions.slice(from);
    if (added.length === 0) return;
    const holders = await Promise.all(added.map((keys) => registerHolder(this.client, keys, workerId)));
    holders.forEach((holder, i) => {
      const p = from + i;
      this.holders[p] = holder;
      this.prepared[p] = this.prepare(this.partitions[p]!, this.settings);
      this.exchanges[p] = this.exchangeOf(p);
    });
  }

  /** Partition `p`'s exchange: its claims carry its queued acks. */
  private exchangeOf(p: number): Exchange {
    const keys = this.partitions[p]!;
    return new Exchange(
      async (limit, acks, ahead) => {
        const settings = this.settings;
        const sentAt = performance.now();
        const out = await claimPrepared(
          this.client,
          ahead ? this.prepared[p]!.ahead : this.prepared[p]!.now,
          limit,
          this.holders[p]!,
          acks,
          this.buckets[p],
        );
        for (const job of out.jobs) this.claimedFrom.set(job.member, p);
        for (const job of out.unreadable) this.claimedFrom.set(job.member, p);
        const replyMs = performance.now() - sentAt;
        this.options.clock?.observe(out.nowUs !== undefined ? out.nowUs / 1000 : out.now, sentAt);
        // A quick reply (nearly always) is used as it came.
        if (!isLateReply(out, replyMs, settings.leaseMs)) return out;
        const confirmed = await confirmLateClaim(out, replyMs, settings.leaseMs, (members) =>
          extend(this.client, keys, settings.leaseMs, members, this.zmscore),
        );
        for (const id of confirmed.lateLost) this.options.onLateLost?.(id);
        // The jobs dropped as lost never reach the dispatcher, which would forget them.
        const kept = new Set(confirmed.jobs.map((job) => job.member));
        for (const job of out.jobs) if (!kept.has(job.member)) this.claimedFrom.delete(job.member);
        return confirmed;
      },
      // Its hooks (nextClaimWithin, freesClaim, wakeClaim) are the worker's, passed through.
      this.options,
    );
  }

  /**
   * Claim with group bounds `groups` from the next call on (queue.configure changed them), and
   * give them to fail, release and reap too.
   */
  setGroups(groups: NonNullable<ClaimSettings['groups']>): void {
    this.groupConcurrency = groups.concurrency;
    this.settings = { ...this.settings, groups };
    const settings = this.settings;
    this.prepared = this.partitions.map((keys) => this.prepare(keys, settings));
  }

  /** The prepared claims of `keys` with `settings`: as they are, and claiming ahead. */
  private prepare(keys: QueueKeys, settings: ClaimSettings): { now: PreparedClaim; ahead: PreparedClaim } {
    return {
      now: prepareClaim(keys, settings),
      ahead: prepareClaim(keys, { ...settings, aheadMs: CLAIM_AHEAD_MS }),
    };
  }

  /** Drop this worker's holder numbers (at close; trim forgets those of crashed workers). */
  async close(): Promise<void> {
    this.workerId = undefined;
    const holders = this.holders;
    this.holders = [];
    await Promise.all(holders.map((holder, p) => dropHolder(this.client, this.partitions[p]!, holder)));
  }

  /**
   * Claim up to `limit` jobs from `partition`, carrying the acks queued for it; `ahead`: also
   * those due within CLAIM_AHEAD_MS, which the worker must hold until due (StartGate).
   */
  claim(partition: number, limit: number, ahead = false): Promise<ClaimOutput> {
    const exchange = this.exchanges[partition];
    if (!exchange) return Promise.reject(new Error('worker storage: claim before open()'));
    return exchange.claim(limit, ahead);
  }

  /** The wheel's bucket starts to pass with `partition`'s calls from now on. */
  setBuckets(partition: number, starts: readonly number[]): void {
    this.buckets[partition] = starts;
  }

  /** Queue an ack on its partition's exchange; `listener` hears its outcome. */
  ackTo(job: AttemptAck, listener: AckListener): void {
    // The partition it was claimed from; the id rides along.
    const exchange = this.exchanges[this.partitionOfClaim(job.member)];
    if (!exchange) return listener.ackFailed(new Error('worker storage: ack before open()'));
    // Queued as it is, not copied: an AttemptAck is an AckItem, and the call reads only those fields.
    exchange.ackTo(job, listener);
  }

  fail(input: AttemptFail): Promise<FailOutput> {
    return fail(this.client, this.keysOf(input.member), {
      member: input.member,
      retryDelayMs: input.retryDelayMs,
      error: input.error,
      deadMaxCount: this.options.deadMaxCount,
      deadMaxAgeMs: this.options.deadMaxAgeMs,
      eventsCap: this.eventsCap,
      layout: this.layout,
      groupConcurrency: this.groupConcurrency,
    });
  }

  progress(input: AttemptProgress): Promise<void> {
    return progress(this.client, this.keysOf(input.member), {
      member: input.member,
      json: input.json,
      capBytes: PROGRESS_MAX_BYTES,
    });
  }

  async childResults(member: string, id: string): Promise<Record<string, unknown>> {
    const { codec } = this.options;
    const out: Record<string, unknown> = {};
    for (const child of await childResults(this.client, this.keysOf(member), id)) {
      if (child.end.kind !== 'completed') continue;
      const bytes = child.end.result;
      // Own properties only, defined rather than assigned: a child id of '__proto__' stays data.
      Object.defineProperty(out, child.id, {
        value: bytes && codec ? decodeJobPayload(codec, bytes, child.id) : undefined,
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    return out;
  }

  async log(input: AttemptLog): Promise<void> {
    await writeLog(this.client, this.keysOf(input.member), {
      member: input.member,
      attempt: input.attempt,
      line: input.line,
    });
  }

  release(input: AttemptRelease): Promise<boolean> {
    return release(this.client, this.keysOf(input.member), {
      member: input.member,
      delayMs: input.delayMs,
      ...(input.snooze === true && { snooze: true }),
      eventsCap: this.eventsCap,
      layout: this.layout,
      groupConcurrency: this.groupConcurrency,
    });
  }

  /**
   * Extend held leases, one call per partition they were claimed from (all at once); deadlines
   * come back in `held`'s order.
   */
  async extend(ms: number, held: ReadonlyArray<{ id: string; member: string }>): Promise<ExtendOutput> {
    if (this.partitions.length === 1) {
      return extend(
        this.client,
        this.partitions[0]!,
        ms,
        held.map((lease) => lease.member),
        this.zmscore,
      );
    }
    const byPartition = new Map<number, number[]>();
    held.forEach((lease, i) => {
      const p = this.partitionOfClaim(lease.member);
      const indexes = byPartition.get(p);
      if (indexes) indexes.push(i);
      else byPartition.set(p, [i]);
    });
    let now = 0;
    const deadlines: Array<number | null> = [];
    await Promise.all(
      [...byPartition].map(async ([p, indexes]) => {
        const out = await extend(
          this.client,
          this.partitions[p]!,
          ms,
          indexes.map((i) => held[i]!.member),
          this.zmscore,
        );
        now = Math.max(now, out.now);
        indexes.forEach((index, k) => (deadlines[index] = out.deadlines[k] ?? null));
      }),
    );
    return { now, deadlines };
  }

  /** Reap every partition; the output is the sum, and the earliest deadline left. */
  async reap(): Promise<ReapOutput> {
    const outs = await Promise.all(
      this.partitions.map((keys) =>
        reap(this.client, keys, {
          limit: REAP_LIMIT,
          deadMaxCount: this.options.deadMaxCount,
          deadMaxAgeMs: this.options.deadMaxAgeMs,
          eventsCap: this.eventsCap,
          layout: this.layout,
          groupConcurrency: this.groupConcurrency,
        }),
      ),
    );
    const deadlines = outs.map((out) => out.nextDeadline).filter((d) => d >= 0);
    return {
      returned: outs.reduce((n, out) => n + out.returned, 0),
      buried: outs.reduce((n, out) => n + out.buried, 0),
      nextDeadline: deadlines.length > 0 ? Math.min(...deadlines) : -1,
    };
  }

  /** Keep completed, cancelled and dead jobs within their bounds, in every partition. */
  trim(): Promise<TrimOutput> {
    // Passing this worker's holder numbers keeps its registry entries alive however long it runs.
    return trimAll(
      this.client,
      this.partitions,
      {
        completed: this.options.keepCompleted,
        cancelled: KEEP_CANCELLED,
        dead: { count: this.options.deadMaxCount, ageMs: this.options.deadMaxAgeMs },
      },
      this.holders,
    );
  }

  /** Whether job `id`, held by lease `member`, is in the cancelled set (queue.cancel took it). */
  async isCancelled(id: string, member: string): Promise<boolean> {
    return (await this.client.zscore(this.keysOf(member).cancelled, id)) !== null;
  }

  /**
   * The partition the lease `member` was claimed from; for a lease this worker did not claim (none
   * should reach here), the one its group or id places it in under the current count.
   */
  partitionOfClaim(member: string): number {
    return this.claimedFrom.get(member) ?? partitionOfMember(member, this.partitions.length);
  }

  /** The attempt holding lease `member` has ended: its partition need not be remembered. */
  forget(member: string): void {
    this.claimedFrom.delete(member);
  }

  /** The keys of the partition the job held by lease `member` was claimed from. */
  private keysOf(member: string): QueueKeys {
    return this.partitions[this.partitionOfClaim(member)]!;
  }
}
