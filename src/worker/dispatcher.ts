/**
 * The dispatcher of running attempts. A claimed job becomes an Attempt (attempt.ts) holding its
 * lease, renewed by the lease keeper from then on. It runs at once when a slot is free, waits among
 * the prefetched for the next slot otherwise, or (the option `batch`) joins the batch being formed.
 * Every attempt is known by its lease member until it ends, so a cancel or a lost lease reaches
 * that job alone, and shutdown hands back what never started and waits for what runs.
 */
import type { ClaimedJob, UnreadableJob } from '../operations/claim.js';
import { tokenOfLease } from '../members/lease.js';
import { NEW_JOB_HEADER } from '../record/index.js';
import { Attempt, type AttemptHooks, type AttemptStore } from './attempt.js';
import { BatchCollector } from './batch-collector.js';
import type { ResolvedBatch } from './batch-options.js';
import type { CounterFlusher } from './counters.js';
import { Flight, SETTLED, type FlightLane } from './flight.js';
import type { HeldLease, LeaseKeeper } from './lease-keeper.js';
import { runAttempt, type RunDeps } from './run-attempt.js';
import { runBatch, type BatchRunDeps } from './run-batch.js';
import type { Slots } from './slots.js';
import type { StartGate } from './start-gate.js';

/** A one-job handler: what each attempt runs with (run-attempt.ts). */
export interface OneJobRuns<T> {
  run: RunDeps<T>;
}

/** A batch handler: the batch bounds, and what each batch runs with (run-batch.ts). */
export interface BatchRuns<T> {
  batch: ResolvedBatch;
  run: Omit<BatchRunDeps<T>, 'handlerDone'>;
  /** The server clock's estimate now, ms (a batch waits for its earliest job by it). */
  now(): number;
}

/** What the dispatcher needs from the worker. */
export interface DispatcherDeps<T> {
  /** What `concurrency` bounds: jobs (or batches) whose handler has not finished. */
  slots: Slots;
  /** How many claimed jobs may wait for a slot (the option `prefetch`; 0 for a batch worker). */
  prefetch: number;
  /** Holds a job claimed ahead until it is due by the server clock. */
  gate: StartGate;
  keeper: Pick<LeaseKeeper, 'track' | 'untrack'>;
  counters: Pick<CounterFlusher, 'count' | 'lateness'>;
  /** The partition the lease member was claimed from: a claim is counted there (WorkerStorage). */
  partitionOf(member: string): number;
  /** The attempt holding this lease member has ended: its claimed partition may be forgotten. */
  forgetClaim(member: string): void;
  /** Where each attempt sends its fate. */
  store: AttemptStore;
  /** What each attempt tells the worker. */
  hooks: AttemptHooks<T>;
  handler: OneJobRuns<T> | BatchRuns<T>;
  /** Whether the job of `lease` is in the cancelled set: a refused renewal may be a missed cancel. */
  wasCancelled(lease: HeldLease): Promise<boolean>;
  /** True once the worker is closing: prefetched jobs are then handed back, not started. */
  closing(): boolean;
  report(err: unknown): void;
}

/** An attempt the dispatcher knows, and when it is done. */
interface Known<T> {
  readonly attempt: Attempt<T>;
  readonly done: Promise<void>;
}

/** Runs claimed jobs in the worker's slots. */
export class Dispatcher<T> {
  /**
   * Attempts by lease member (the same job can be here twice: a lapsed lease re-claimed), and when
   * each is done: running ones, prefetched ones not started yet, and those of a forming batch.
   */
  private readonly inFlight = new Map<string, Known<T>>();
  /** Prefetched attempts waiting for a slot, in claim order: they hold leases already. */
  private readonly prefetched: Array<Attempt<T>> = [];
  /** What every one-job flight tells the dispatcher (Flight): made once, not per job. */
  private readonly lane: FlightLane<T>;
  private readonly one: RunDeps<T> | undefined;
  private readonly batch: { run: BatchRuns<T>['run']; collector: BatchCollector<Attempt<T>> } | undefined;

  constructor(private readonly deps: DispatcherDeps<T>) {
    this.lane = {
      slots: deps.slots,
      next: () => this.startPrefetched(),
      ended: (flight) => this.forget(flight.attempt),
    };
    const handler = deps.handler;
    if ('batch' in handler) {
      // Concurrency counts batches in flight: a slot is held from a batch's dispatch to its handler's end.
      this.batch = {
        run: handler.run,
        collector: new BatchCollector<Attempt<T>>({
          ...handler.batch,
          now: () => handler.now(),
          dispatch: (attempts) => this.runBatchInSlot(attempts),
        }),
      };
    } else {
      this.one = handler.run;
    }
  }

  /**
   * How many jobs the next claim may take: the free slots plus the room for prefetched jobs not yet
   * started; a batch worker with a free slot takes exactly the room left in the batch being formed.
   */
  freeSlots(): number {
    const { slots } = this.deps;
    if (this.batch) return slots.free() > 0 ? this.batch.collector.room() : 0;
    return slots.free() + this.deps.prefetch - this.prefetched.length;
  }

  /**
   * A claimed job: its attempt holds the lease (renewed by the keeper from now on). It runs at
   * once when a slot is free, else waits among the prefetched for the next slot.
   */
  start(claimed: ClaimedJob): void {
    const { deps } = this;
    const attempt = new Attempt<T>(claimed, deps.store, deps.hooks);
    const partition = deps.partitionOf(claimed.member);
    deps.counters.count('claimed', 1, partition);
    // A job claimed ahead starts at its due time (runFlight): no lateness to count.
    deps.counters.lateness(Math.max(0, claimed.claimedAt - claimed.runAt), partition);
    deps.keeper.track(attempt.lease);
    if (this.batch) {
      // Known here, so a cancel or a lost lease finds the attempt while its batch forms.
      this.inFlight.set(claimed.member, { attempt, done: SETTLED });
      this.batch.collector.add(attempt, claimed.runAt);
    } else if (deps.slots.free() > 0) this.runInSlot(attempt);
    else {
      this.prefetched.push(attempt);
      this.inFlight.set(claimed.member, { attempt, done: SETTLED });
    }
  }

  /**
   * A leased job whose record this version cannot read (a newer format): buried at once with the
   * reason (fail.lua with no retry), never guessed at.
   */
  buryUnreadable(job: UnreadableJob): void {
    const claimed: ClaimedJob = {
      id: job.id,
      member: job.member,
      token: tokenOfLease(job.member),
      header: UNREADABLE_HEADER,
      payload: Buffer.alloc(0),
      runAt: 0,
      claimedAt: 0,
      deadline: 0,
    };
    new Attempt<T>(claimed, this.deps.store, this.deps.hooks)
      .bury(null, job.error)
      .catch((err: unknown) => this.deps.report(err))
      .finally(() => this.deps.forgetClaim(job.member));
  }

  /**
   * The keeper found `lease` gone. A refused renewal may be a cancel whose `C` message this worker
   * missed (its subscription was down): the cancelled set says which, so the handler's signal gets
   * the right reason. False when no attempt of this worker holds it.
   */
  leaseLost(lease: HeldLease): boolean {
    const known = this.inFlight.get(lease.member);
    if (!known) return false;
    this.deps.wasCancelled(lease).then(
      (cancelled) => {
        if (cancelled) known.attempt.cancel();
        else known.attempt.loseLease('not renewed in time');
      },
      () => known.attempt.loseLease('not renewed in time'),
    );
    return true;
  }

  /**
   * A `C <lease member>` wake message: queue.cancel() took a running job. A message for another
   * worker's job matches nothing here (false).
   */
  cancelled(leaseMember: string): boolean {
    const known = this.inFlight.get(leaseMember);
    if (!known) return false;
    known.attempt.cancel();
    return true;
  }

  /**
   * At shutdown: prefetched jobs (or a batch still forming) never started, so they are handed back
   * uncharged, due at once, for another worker.
   */
  async handBackUnstarted(): Promise<void> {
    const unstarted = [...this.prefetched.splice(0), ...(this.batch?.collector.take() ?? [])];
    await Promise.all(
      unstarted.map(async (attempt) => {
        await attempt.release('shutdown', 0);
        this.forget(attempt);
      }),
    );
  }

  /**
   * At shutdown: wait up to `timeoutMs` for the running attempts to end, then hand back the jobs
   * of those still running. A release not applied is reported by its attempt: its lease will
   * expire and the reaper return the job. Nothing is lost.
   */
  async settleRunning(timeoutMs: number): Promise<void> {
    const running = [...this.inFlight.values()];
    let timer: NodeJS.Timeout | undefined;
    const timedOut = await Promise.race([
      Promise.all(running.map((known) => known.done)).then(() => false),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), timeoutMs))),
    ]);
    clearTimeout(timer);
    if (timedOut) {
      await Promise.all([...this.inFlight.values()].map((known) => known.attempt.release('shutdown', 0)));
    }
  }

  /** The attempt is over: its lease is no longer renewed, and it is forgotten. */
  private forget(attempt: Attempt<T>): void {
    this.deps.keeper.untrack(attempt.lease);
    this.inFlight.delete(attempt.claimed.member);
    this.deps.forgetClaim(attempt.claimed.member);
  }

  /** Run `attempt` in a slot; when its handler is done the slot goes to the next prefetched job. */
  private runInSlot(attempt: Attempt<T>): void {
    this.deps.slots.hold();
    const flight = new Flight(attempt, this.lane);
    this.inFlight.set(attempt.claimed.member, flight);
    // Never rejects; its end is the flight's (Flight.done), told by the attempt once acked.
    void this.runFlight(flight);
  }

  /** The attempt's run, once it may start: never rejects, and ends the flight whichever way it goes. */
  private runFlight(flight: Flight<T>): Promise<void> {
    const claimed = flight.attempt.claimed;
    // Claimed ahead: held in its slot until due.
    if (claimed.claimedAt < claimed.runAt) return this.runWhenDue(flight);
    return this.runStarted(flight);
  }

  /**
   * A job leased before its due time (claimed ahead): held until due, and its start, by a lower
   * bound of the server clock, is what the job reports as claimedAt. That bound is not raised to
   * runAt: the raw lease start stays in the lease member and the record (queue.get(id).lease),
   * and a claimedAt below runAt would show a gate that let the job go early.
   */
  private async runWhenDue(flight: Flight<T>): Promise<void> {
    const claimed = flight.attempt.claimed;
    try {
      claimed.claimedAt = await this.deps.gate.startAt(claimed.runAt, claimed.reply);
    } catch (err) {
      this.deps.report(err);
      flight.ended();
      return;
    }
    return this.runStarted(flight);
  }

  private runStarted(flight: Flight<T>): Promise<void> {
    const attempt = flight.attempt;
    try {
      // A start held past the lease (the event loop blocked between the claim reply and here, a
      // slot freed late, a gate delayed): the lease is gone and the job may run elsewhere by now,
      // so the handler must not start. Seen in the chaos run: a handler blocking its process for
      // 2 s right after a claim, and the claimed job then started 25 ms after its lease ended.
      if (attempt.lease.lost || this.deps.gate.serverNow(attempt.claimed.reply) >= attempt.lease.deadline) {
        attempt.loseLease('expired before its handler started');
        flight.ended();
        return SETTLED;
      }
    } catch (err) {
      this.deps.report(err);
      flight.ended();
      return SETTLED;
    }
    return runAttempt(attempt, this.one!, flight);
  }

  /**
   * Run a formed batch in one slot. Each attempt stays known (so a cancel or a lost lease reaches
   * that job alone) until the batch's fates are all sent.
   */
  private runBatchInSlot(attempts: Array<Attempt<T>>): void {
    const freeSlot = this.deps.slots.take();
    const done = runBatch(attempts, { ...this.batch!.run, handlerDone: freeSlot })
      .catch((err: unknown) => this.deps.report(err))
      .finally(() => {
        for (const attempt of attempts) this.forget(attempt);
        freeSlot();
      });
    for (const attempt of attempts) this.inFlight.set(attempt.claimed.member, { attempt, done });
  }

  /** Start prefetched jobs while slots are free (not once closing: those are handed back). */
  private startPrefetched(): void {
    const { slots } = this.deps;
    while (!this.deps.closing() && this.prefetched.length > 0 && slots.free() > 0) {
      const next = this.prefetched.shift()!;
      // A prefetched job cancelled or lost while it waited is not started: its fate is settled.
      if (next.state !== 'running') {
        this.forget(next);
        continue;
      }
      this.runInSlot(next);
    }
  }
}

/** What an attempt of an unreadable record knows of its header: nothing but defaults. */
const UNREADABLE_HEADER = { ...NEW_JOB_HEADER, attempts: 1 };
