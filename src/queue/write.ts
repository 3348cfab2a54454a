/**
 * The add path: validate and encode every job first (nothing is written when one is bad), then one
 * add script call per batch of one partition's jobs, all at once, with WAIT where a job asks for
 * durability.
 */
import { jsonCodec } from '../codec/json.js';
import { encodeJobPayload, encodeJsonJobPayload } from '../codec/payload.js';
import { ValidationError } from '../errors.js';
import { describe } from '../duration.js';
import {
  ADD_OPTIONS,
  newJobId,
  resolveAddOptions,
  type AddOptions,
  type ResolvedAddOptions,
} from '../job-options.js';
import { assertKnownOptions } from '../option-names.js';
import type { AddInput } from '../operations/add.js';
import { packAddJobs } from '../operations/add-pack.js';
import { UNKNOWN_GROUP_CONCURRENCY } from '../operations/waiting-keys.js';
import { addBatch, checkDurability, type Written } from './add-batch.js';
import { addCallBounds, addCallLengths } from './add-calls.js';
import type { AddResult } from './add-result.js';
import { jobRecord, newJobHeader } from './new-job-record.js';
import { mapByPartition, partitionOf, placementOf, placementOfNew } from '../partition/index.js';
import { validatePayload } from '../schema.js';
import type { Producer } from '../definition/producer.js';

/** One job of addBulk. */
export interface BulkJob<T> {
  payload: T;
  opts?: AddOptions;
}

/** The keys of one addBulk entry. */
const BULK_JOB_KEYS: ReadonlySet<string> = new Set(['payload', 'opts']);

/**
 * One addBulk entry is `{ payload, opts? }`: anything else is refused, and an add option written
 * beside the payload (`{ payload, delay: 5000 }`, which would otherwise run at once) is pointed
 * to `opts`.
 */
function checkBulkJob(job: unknown): void {
  if (typeof job !== 'object' || job === null || Array.isArray(job)) {
    throw new ValidationError(`each addBulk entry must be { payload, opts? }, got ${describe(job)}`, 'job');
  }
  assertKnownOptions(job, BULK_JOB_KEYS, 'addBulk entry key', {
    hint: (key) =>
      ADD_OPTIONS.has(key)
        ? `'opts.${key}'? add options go in opts: { payload, opts: { ${key}: ... } }`
        : undefined,
  });
}

// A generated id taken this many times in a row means ids are not random: the add gives up.
const MAX_ID_DRAWS = 5;

/**
 * Add `jobs` through `producer`; `traceparent` (of the add's span) goes into every record.
 * `calledAt` is the performance.now() of the add()/addBulk() call: delays count from it.
 */
export async function writeJobs<T>(
  producer: Producer<T>,
  jobs: ReadonlyArray<BulkJob<T>>,
  traceparent: string | undefined,
  calledAt: number,
): Promise<AddResult[]> {
  const given: unknown = jobs;
  if (!Array.isArray(given)) throw new ValidationError('addBulk takes an array of { payload, opts }');
  jobs.forEach((job, i) => {
    try {
      checkBulkJob(job);
    } catch (err) {
      rethrow(err, i, jobs);
    }
  });
  // Validation may be async (Standard Schema allows it); the stored payload is the one given, so
  // a transforming schema runs once, in the worker.
  const schema = producer.schema;
  if (schema) {
    await Promise.all(
      jobs.map((job, i) =>
        validatePayload(schema, job.payload).catch((err: unknown) => rethrow(err, i, jobs)),
      ),
    );
  }
  const { context } = producer;
  // Everything is checked and encoded before the queue is settled (which may record its config),
  // unless the codec is the recorded one: then it is known only once settled.
  const codec = context.definition.codec ?? (await context.settle()).codec;
  const json = codec === jsonCodec;
  const durability: Array<ResolvedAddOptions['durability']> = [];
  const inputs: AddInput[] = jobs.map((job, i) => {
    try {
      const opts = resolveAddOptions(job.opts, producer.jobDefaults);
      durability[i] = opts.durability;
      // The json codec's payload stays text until it is written into the packed value.
      const payload = json
        ? encodeJsonJobPayload(opts.id, job.payload, producer.maxPayloadBytes)
        : encodeJobPayload(codec, opts.id, job.payload, producer.maxPayloadBytes);
      const header = newJobHeader(opts, context.definition.version, traceparent);
      const input: AddInput = {
        id: opts.id,
        when: opts.when,
        record: jobRecord(header, payload),
        priority: opts.priority,
        mode: opts.generated ? 'new' : opts.onExists,
      };
      if (opts.group !== undefined) input.group = opts.group;
      return input;
    } catch (err) {
      return rethrow(err, i, jobs);
    }
  });
  const { eventsCap, layout, strategy, record } = await context.settle();
  const grouped = inputs.findIndex((input) => input.group !== undefined);
  if (strategy === 'wheel' && grouped >= 0) {
    rethrow(
      new ValidationError(
        `group is not supported with the wheel strategy (its buckets are FIFO lists, with no per-group order or bound); use the zpopmin or range strategy for groups`,
        'group',
      ),
      grouped,
      jobs,
    );
  }
  const partitions = context.partitions.length;
  // Unknown (0) until a worker recorded it: the script then puts a group in turn and the claim checks.
  const groupConcurrency = record.groups?.concurrency ?? UNKNOWN_GROUP_CONCURRENCY;
  // The bound (queue.configure) and the partition count (a re-partition) are live: the next adds
  // use what is recorded a second from now.
  context.refreshLiveSoon();
  const moving = inputs.findIndex(
    (input) =>
      input.group !== undefined &&
      input.mode === 'replace' &&
      placementOf(input.id, input.group, context.partitionsBase) !==
        partitionOf(input.id, context.partitionsBase),
  );
  if (moving >= 0) {
    // The job it replaces may wait in the id's partition, the new one goes to the group's: no one
    // script can change both (docs/ARCHITECTURE.md §9).
    rethrow(
      new ValidationError(
        `onExists 'replace' with a group needs the id and the group in one partition on a queue with partitions: ${partitions}; cancel the old job and add the new one instead`,
        'group',
      ),
      moving,
      jobs,
    );
  }
  const prioritized = inputs.findIndex((input) => input.priority !== 0);
  if (strategy === 'wheel' && prioritized >= 0) {
    rethrow(
      new ValidationError(
        `priority is not supported with the wheel strategy (its buckets are FIFO lists); use the zpopmin or range strategy for priorities`,
        'priority',
      ),
      prioritized,
      jobs,
    );
  }
  const items = inputs.map((input, i) => ({ input, durability: durability[i] }));
  type Item = (typeof items)[number];
  // A partition's next call, packed while the one before it is out (its jobs and packed value).
  const ready = new WeakMap<Item[], { batch: AddInput[]; packed: Buffer | undefined }>();
  const prepare = (batch: Item[]) => {
    const inputs = batch.map((job) => job.input);
    return { batch: inputs, packed: packAddJobs(inputs) };
  };
  // Each call bounded by jobs and bytes (add-calls.ts): while one runs, no worker can claim.
  const limit = addCallBounds();
  const callLengths = (some: readonly Item[]) =>
    addCallLengths(
      some.map((item) => item.input),
      limit,
    );
  // A partition whose server clock this producer has no recent bound of (a fresh Queue, or no add
  // for 10 s, server-time-bound.ts): its first call goes alone, the others once its reply gave
  // one. Sent with the first, the second call's jobs would count their delays from when Redis ran
  // it, after the first: late by the first call's run (W3: 200 of the 500 jobs of its one addBulk).
  const firstAnswered = new Map<number, Promise<unknown>>();
  const send = (some: Item[]): Promise<Written[]> =>
    mapByPartition(
      some,
      // Placed by the counts as they are now (a re-partition followed meanwhile moves nothing).
      (job) =>
        placementOfNew(
          job.input.id,
          job.input.group,
          job.input.mode === 'new',
          context.partitions.length,
          context.partitionsBase,
        ),
      (job) => job.input.group ?? job.input.id,
      (p, batch, upcoming) => {
        const serverTime = context.serverTimes[p]!;
        const write = () => {
          const call = ready.get(batch) ?? prepare(batch);
          const written = addBatch(
            producer,
            context.partitions[p]!,
            call,
            { eventsCap, layout, calledAt, groupConcurrency, serverTime },
            batch.map((job) => job.durability),
          );
          // This call is written (addBatch runs up to the send before it returns): the next is
          // packed while Redis runs it, so it goes as soon as a call answers.
          if (upcoming) ready.set(upcoming, prepare(upcoming));
          return written;
        };
        const first = firstAnswered.get(p);
        if (first) return first.then(write);
        const written = write();
        const bound = serverTime.atMost(calledAt) !== undefined;
        firstAnswered.set(p, bound ? Promise.resolve() : written.catch(() => {}));
        return written;
      },
      callLengths,
      limit.inFlight,
    );
  const outputs = await send(items);
  // A generated id that is taken (83 random bits: about 10^-9 over a queue's life, §3.3) is drawn
  // again and that job added again; nothing was written for it.
  for (let draw = 1; ; draw++) {
    const taken: number[] = [];
    outputs.forEach((out, i) => out.taken && taken.push(i));
    if (taken.length === 0) break;
    if (draw >= MAX_ID_DRAWS) {
      throw new Error(
        `add: ${MAX_ID_DRAWS} generated ids in a row were taken for one job; the id generator is not random`,
      );
    }
    const again = taken.map((i) => {
      const item = items[i]!;
      item.input = { ...item.input, id: newJobId() };
      inputs[i] = item.input;
      return item;
    });
    const redone = await send(again);
    taken.forEach((i, k) => (outputs[i] = redone[k]!));
  }
  return checkDurability(
    outputs.map((out, i) => {
      // Fields set one by one, not spread in: this runs once per job of a bulk add.
      const result: AddResult = { id: inputs[i]!.id, runAt: new Date(out.runAt), created: out.created };
      if (out.completedAt !== undefined) result.completedAt = new Date(out.completedAt);
      if (out.replaced !== undefined) result.replaced = out.replaced;
      if (out.state !== undefined) result.state = out.state;
      return result;
    }),
    outputs,
    durability,
  );
}

function rethrow(err: unknown, i: number, jobs: readonly unknown[]): never {
  if (jobs.length > 1 && err instanceof Error) err.message = `job ${i}: ${err.message}`;
  throw err;
}
