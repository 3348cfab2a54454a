/**
 * The worker's parts that depend on the queue's settled definition (layout, events cap, codec,
 * group bounds), made at start-up once it is known: the storage, the lease keeper, the reaper and
 * the dispatcher of running attempts; then, once those are open, the claim source and the claim
 * loop that feeds the dispatcher. src/worker.ts owns the parts that live for the whole worker and
 * hands them in here (AssembleDeps), so this is wiring only, kept apart from the Worker's API.
 */
import type { EventEmitter } from 'node:events';
import type { ServerClock, Sleeper } from '../clock.js';
import type { Settled } from '../definition/context.js';
import { LeaseLostError } from '../errors.js';
import { groupOfLease } from '../members/lease.js';
import { blockingMove } from '../redis/capabilities.js';
import type { RedisClient } from '../redis/connection.js';
import type { QueueKeys } from '../redis/keys.js';
import { loadTracing } from '../tracing.js';
import { ClaimLoop } from './claim-loop.js';
import type { ClaimSource } from './claim-source.js';
import type { CounterFlusher } from './counters.js';
import { Dispatcher } from './dispatcher.js';
import { attemptHooks, type WorkerEvents } from './events.js';
import type { FatePolicy } from './fate.js';
import { LeaseKeeper } from './lease-keeper.js';
import type { ResolvedWorkerOptions } from './options.js';
import { Reaper } from './reaper.js';
import type { Handler } from './run-attempt.js';
import type { BatchHandler } from './run-batch.js';
import type { Slots } from './slots.js';
import { claimSourceFor } from './sources.js';
import { CLAIM_AHEAD_MS, StartGate } from './start-gate.js';
import { claimSettings, WorkerStorage } from './storage.js';

/** The parts made at start-up, once the queue's definition is settled. */
export interface Running<T> {
  storage: WorkerStorage;
  keeper: LeaseKeeper;
  reaper: Reaper;
  dispatcher: Dispatcher<T>;
  source?: ClaimSource;
  loop?: ClaimLoop;
}

/** The worker's lasting parts, which the settled ones are wired to. */
export interface AssembleDeps<T, R> {
  /** The queue's name. */
  name: string;
  client: RedisClient;
  /** The keys of each partition (one entry unless `partitions` > 1). */
  partitions: readonly QueueKeys[];
  options: ResolvedWorkerOptions<T>;
  clock: ServerClock;
  sleeper: Sleeper;
  slots: Slots;
  counters: CounterFlusher;
  fates: FatePolicy;
  /** One job per handler call, or (the option `batch`) a batch. */
  handler: { one: Handler<T> } | { batch: BatchHandler<T> };
  /** The Worker, which emits the attempts' events. */
  events: Pick<EventEmitter<WorkerEvents<T, R>>, 'emit'>;
  /** True once the worker is closing. */
  closing: () => boolean;
  report: (err: unknown) => void;
  /** Sweeps the queue's flow outbox (src/queue/flow-courier.ts), with each periodic trim. */
  sweepFlows?: () => Promise<unknown>;
}

/** Make the parts that need the settled definition: storage, keeper, reaper, dispatcher. */
export async function assemble<T, R>(deps: AssembleDeps<T, R>, settled: Settled): Promise<Running<T>> {
  const { options: o, client, clock, sleeper, slots, counters, partitions, report } = deps;
  const storage = new WorkerStorage(
    client,
    partitions,
    {
      ...o,
      clock,
      codec: settled.codec,
      nextClaimWithin: () => sleeper.dueEndWithin(),
      // A grouped job's ack frees its group's slot (its member names the group): the group's next
      // job may be due, and the claim loop, asleep with free slots, claims it with the ack.
      freesClaim: (item) => groupOfLease(item.member) !== undefined,
      wakeClaim: () => sleeper.interrupt(),
      onLateLost: (id) =>
        report(new LeaseLostError(id, 'the claim reply came back after the lease ended; not started')),
    },
    claimSettings(settled, o),
  );
  const keeper: LeaseKeeper = new LeaseKeeper({
    leaseMs: o.leaseMs,
    clock,
    extend: (ms, held) => storage.extend(ms, held),
    onLost: (lease) => {
      if (!dispatcher.leaseLost(lease)) report(new LeaseLostError(lease.id, 'not renewed in time'));
    },
    onError: report,
  });
  const reaper = new Reaper(
    o.reapIntervalMs,
    () => storage.reap(),
    () => slots.full(),
    report,
    async () => {
      const trimmed = await storage.trim();
      await deps.sweepFlows?.();
      return trimmed;
    },
  );
  const tracing = await loadTracing();
  // The codec given, else the queue's recorded one.
  const run = { queue: deps.name, codec: settled.codec, options: o, fates: deps.fates, tracing, report };
  const handler = deps.handler;
  const dispatcher: Dispatcher<T> = new Dispatcher<T>({
    slots,
    prefetch: o.prefetch,
    gate: new StartGate(clock),
    keeper,
    counters,
    partitionOf: (member) => storage.partitionOfClaim(member),
    forgetClaim: (member) => storage.forget(member),
    store: storage,
    hooks: attemptHooks<T, R>({
      events: deps.events,
      counters,
      clock,
      partitions: partitions.length,
      reaper,
      keeper,
      report,
    }),
    handler:
      'batch' in handler
        ? { batch: o.batch!, run: { ...run, handler: handler.batch }, now: () => clock.now() }
        : { run: { ...run, handler: handler.one } },
    wasCancelled: (lease) => storage.isCancelled(lease.id, lease.member),
    closing: () => deps.closing(),
    report,
  });
  return { storage, keeper, reaper, dispatcher };
}

/** The claim source of the settled layout, claiming through `running`'s storage (not started). */
export function claimSource<T, R>(
  deps: AssembleDeps<T, R>,
  settled: Settled,
  running: Running<T>,
): ClaimSource {
  const { storage } = running;
  return claimSourceFor({
    client: deps.client,
    partitions: deps.partitions,
    strategy: settled.strategy,
    layout: settled.layout,
    claim: (partition, limit, ahead) => storage.claim(partition, limit, ahead),
    setBuckets: (partition, starts) => storage.setBuckets(partition, starts),
    clock: deps.clock,
    sleeper: deps.sleeper,
    maxSleepMs: deps.options.maxSleepMs,
    blockingMove: blockingMove(settled.caps),
    onError: (err) => deps.report(err),
  });
}

/** The claim loop over `source`, starting what it claims in `running`'s dispatcher (not started). */
export function claimLoop<T, R>(
  deps: AssembleDeps<T, R>,
  settled: Settled,
  running: Running<T>,
  source: ClaimSource,
): ClaimLoop {
  const { dispatcher } = running;
  const o = deps.options;
  return new ClaimLoop({
    // The running source, not `source`: a re-partition followed replaces it (Worker).
    source: {
      claim: (limit, ahead) => (running.source ?? source).claim(limit, ahead),
      pause: (ms, approach) => (running.source ?? source).pause(ms, approach),
    },
    freeSlots: () => dispatcher.freeSlots(),
    waitForSlot: () => deps.slots.waitForSlot(),
    start: (claimed) => dispatcher.start(claimed),
    bury: (job) => dispatcher.buryUnreadable(job),
    clock: deps.clock,
    sleeper: deps.sleeper,
    maxSleepMs: o.maxSleepMs,
    // A batch forms from jobs that are due; the wheel takes whole buckets when they end.
    claimAheadMs: o.batch || settled.layout.kind === 'wheel' ? 0 : CLAIM_AHEAD_MS,
    onError: (err) => deps.report(err),
  });
}
