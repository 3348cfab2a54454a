/**
 * The exchange duty of one partition (docs/design/HOT-PATH.md §6.1): acks and claims share one
 * script call. Acks queue while a call is in flight; the next call carries all of them, whether
 * it claims (the claim loop) or not (an ack-only flush, sent as soon as nothing else is on its
 * way). At most one call per partition is in flight, so acks and claims stay in order, and no ack
 * waits for a timer.
 */
import type { AckItem, AckOutcome, ClaimOutput } from '../operations/claim.js';

/**
 * Acks that go in one call, and that call's reply: one promise for all of them, where each ack
 * had a promise, its resolvers and a record of its own (~0.4 KB a job at concurrency 50).
 */
class AckBatch {
  readonly items: AckItem[] = [];
  readonly reply: Promise<ClaimOutput>;
  answer!: (out: ClaimOutput) => void;
  refuse!: (err: unknown) => void;

  constructor() {
    this.reply = new Promise((resolve, reject) => {
      this.answer = resolve;
      this.refuse = reject;
    });
  }
}

/** Sends `limit` and the acks in one call; `limit` 0 acks only. */
export type ExchangeCall = (limit: number, acks: readonly AckItem[]) => Promise<ClaimOutput>;

const NO_ACKS: readonly AckItem[] = [];

/** One partition's queue of acks, and the one call in flight. */
export class Exchange {
  /** Acks waiting for a call, in order: each batch goes in one call, and only the last one grows. */
  private queued: AckBatch[] = [];
  /** The end of the last call queued: each call starts after the one before has answered. */
  private tail: Promise<unknown> = Promise.resolve();
  /** The planned ack-only flush, cancelled when a call takes every queued ack first. */
  private flushPlanned: NodeJS.Immediate | undefined;

  constructor(
    private readonly call: ExchangeCall,
    /** Acks per call at most; more go in the next call. */
    private readonly maxAcks = 500,
  ) {}

  /** Queue an ack; resolves with its outcome once a call has carried it. */
  ack(item: AckItem): Promise<AckOutcome> {
    let batch = this.queued[this.queued.length - 1];
    if (!batch || batch.items.length >= this.maxAcks) this.queued.push((batch = new AckBatch()));
    const index = batch.items.push(item) - 1;
    this.planFlush();
    return batch.reply.then((out) => outcomeAt(out, index, item));
  }

  /** Claim up to `limit` jobs, carrying every queued ack; waits for the call in flight first. */
  claim(limit: number): Promise<ClaimOutput> {
    const next = this.tail.then(() => this.send(limit));
    this.tail = next.catch(() => {});
    return next;
  }

  /** Acks waiting for a call. */
  get pending(): number {
    return this.queued.reduce((n, batch) => n + batch.items.length, 0);
  }

  /**
   * Send the queued acks on their own unless a claim takes them first: planned after the
   * current turn of the event loop, by which time a claim the freed slot triggers has gone.
   */
  private planFlush(): void {
    if (this.flushPlanned) return;
    this.flushPlanned = setImmediate(() => {
      this.flushPlanned = undefined;
      if (this.queued.length === 0) return;
      const next = this.tail.then(() => (this.queued.length > 0 ? this.send(0) : undefined));
      this.tail = next.catch(() => {});
    });
  }

  private async send(limit: number): Promise<ClaimOutput> {
    const batch = this.queued.shift();
    if (this.queued.length > 0) this.planFlush();
    else if (this.flushPlanned) {
      // It would find nothing to send; an immediate left pending also costs the event loop one
      // more poll (at concurrency 1, one per job).
      clearImmediate(this.flushPlanned);
      this.flushPlanned = undefined;
    }
    let out: ClaimOutput;
    try {
      out = await this.call(limit, batch ? batch.items : NO_ACKS);
    } catch (err) {
      batch?.refuse(err);
      throw err;
    }
    batch?.answer(out);
    return out;
  }
}

/** The outcome of the ack sent at `index` of a call that answered `out`. */
function outcomeAt(out: ClaimOutput, index: number, item: AckItem): AckOutcome {
  const outcome = out.acks[index];
  if (!outcome) throw new Error(`claim: no ack outcome for ${item.member}`);
  return outcome;
}
