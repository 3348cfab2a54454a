/**
 * Every error delayq throws or reports. Each has a stable `code` and a message that says what was
 * wrong and what to do about it.
 */

/** Base class of every delayq error; `code` is stable across versions, the message is for people. */
export class DelayqError extends Error {
  readonly code: string;
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }
}

/** An option or argument was invalid; nothing was written. */
export class ValidationError extends DelayqError {
  /**
   * Every problem found, each with the path of the offending field: a payload's schema issues, or
   * for an option, one issue whose path is the option's name (`leaseMs`, `backoff.delay`).
   */
  readonly issues: ReadonlyArray<{ path: string; message: string }>;
  /** `issues`, or the path of the one option that was wrong (the issue's message is then `message`). */
  constructor(message: string, issues: ReadonlyArray<{ path: string; message: string }> | string = []) {
    super('DELAYQ_VALIDATION', message);
    this.issues = typeof issues === 'string' ? [{ path: issues, message }] : issues;
  }
}

/** The encoded job is larger than `maxPayloadBytes`; nothing was written. */
export class PayloadTooLargeError extends DelayqError {
  constructor(
    readonly size: number,
    readonly limit: number,
  ) {
    super(
      'DELAYQ_PAYLOAD_TOO_LARGE',
      `payload encodes to ${size} bytes, over the limit of ${limit} bytes; store large data elsewhere and enqueue a reference, or raise maxPayloadBytes`,
    );
  }
}

/** A payload cannot be represented by the codec (a function, a symbol, a cycle, ...); nothing was written. */
export class EncodeError extends DelayqError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('DELAYQ_ENCODE', message, options);
  }
}

/** Stored bytes could not be decoded into a job envelope; the job is dead-lettered with this reason. */
export class DecodeError extends DelayqError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('DELAYQ_DECODE', message, options);
  }
}

/**
 * This worker no longer holds the job's lease (it expired and was reaped, or the job was claimed by
 * another worker): its ack, fail or extend was refused and nothing was applied.
 */
export class LeaseLostError extends DelayqError {
  constructor(
    readonly jobId: string,
    detail: string,
  ) {
    super(
      'DELAYQ_LEASE_LOST',
      `lease on job ${jobId} was lost (${detail}); the result was not applied and the job runs again elsewhere. Raise leaseMs or call job.extendLease() in long handlers`,
    );
  }
}

/** The payload was written by a newer schema version than this process knows; the job was put back for later. */
export class UnsupportedVersionError extends DelayqError {
  constructor(
    readonly jobId: string,
    readonly jobVersion: number,
    readonly knownVersion: number,
  ) {
    super(
      'DELAYQ_UNSUPPORTED_VERSION',
      `job ${jobId} has payload version ${jobVersion} but this worker knows up to ${knownVersion}; it was put back for an upgraded worker`,
    );
  }
}

/** An attempt ran past the job's timeoutMs; it counts as failed with reason "timed out". */
export class JobTimeoutError extends DelayqError {
  constructor(
    readonly jobId: string,
    readonly timeoutMs: number,
  ) {
    super('DELAYQ_TIMEOUT', `timed out: job ${jobId} ran longer than its timeoutMs of ${timeoutMs} ms`);
  }
}

/**
 * An add asked for `durability` and was written on the master, but fewer replicas than asked
 * acknowledged it in time: until one does, a failover can lose it. `results` lists what was
 * written; adding the same ids again is safe (an existing id writes nothing).
 */
export class DurabilityError extends DelayqError {
  constructor(
    readonly requested: number,
    readonly replicated: number,
    readonly timeoutMs: number,
    readonly results: ReadonlyArray<{ id: string; runAt: Date; created: boolean; replicated?: number }>,
    options?: { cause?: unknown },
  ) {
    const what = results.length === 1 ? `job ${results[0]?.id ?? ''}` : `${results.length} jobs`;
    const why = options?.cause instanceof Error ? ` (WAIT failed: ${options.cause.message})` : '';
    super(
      'DELAYQ_DURABILITY',
      `${what} written to the master, but ${replicated} of the ${requested} replicas asked for acknowledged within ${timeoutMs} ms${why}; ` +
        'a failover before a replica has it loses it. Check the replicas (INFO replication), then add again with the same id, or raise durability.timeoutMs',
      options,
    );
  }
}

/** Redis could not be reached or answered in a way delayq cannot work with. */
export class ConnectionError extends DelayqError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('DELAYQ_CONNECTION', message, options);
  }
}

/** The Redis server lacks the commands a claim strategy needs. */
export class UnsupportedServerError extends DelayqError {
  constructor(message: string) {
    super('DELAYQ_UNSUPPORTED_SERVER', message);
  }
}

/** The queue or worker was closed; the operation was not attempted. */
export class ClosedError extends DelayqError {
  constructor(what: string) {
    super('DELAYQ_CLOSED', `${what} is closed; create a new one to continue`);
  }
}

/**
 * A client (Queue, Worker, Scheduler, CLI, dashboard) opened a queue with a setting every client
 * must share (layout, partitions, codec, events) other than the one recorded in the queue's config
 * by its first client. Nothing was written. `field` names the setting; `stored` and `wanted` are
 * the recorded value and this client's.
 */
export class ConfigMismatchError extends DelayqError {
  constructor(
    readonly queue: string,
    readonly field: string,
    readonly stored: string | number,
    readonly wanted: string | number,
    message?: string,
    code = 'DELAYQ_CONFIG_MISMATCH',
  ) {
    super(
      code,
      message ??
        `queue '${queue}' has ${field}: ${String(stored)} recorded but this client uses ${field}: ${String(wanted)}; give every client of the queue the same ${field} (or leave the option out to use the recorded one)`,
    );
  }
}

/**
 * A Queue or Worker met a queue whose stored layout (where waiting jobs live: 'zset' for the
 * zpopmin and range strategies, 'wheel:<granularity ms>' for the wheel) is not its own. Nothing was
 * written: jobs put in one layout are never seen by workers of the other.
 */
export class LayoutMismatchError extends ConfigMismatchError {
  declare readonly stored: string;
  declare readonly wanted: string;
  constructor(queue: string, stored: string, wanted: string) {
    super(
      queue,
      'layout',
      stored,
      wanted,
      `queue '${queue}' has layout '${stored}' but this ${wanted === 'zset' ? 'zpopmin/range' : 'wheel'} client uses '${wanted}'; give every Queue and Worker of the queue the same strategy (and wheel granularity), or drain the queue before changing it`,
      'DELAYQ_LAYOUT_MISMATCH',
    );
  }
}

/**
 * queue.repartition() (or `delayq repartition`) refused: a count below the recorded one, a queue
 * with groups, repeating schedules, flows in progress or the wheel layout, or a paused queue. Nothing was written.
 */
export class RepartitionRefusedError extends DelayqError {
  constructor(
    readonly queue: string,
    readonly reason: string,
  ) {
    super('DELAYQ_REPARTITION_REFUSED', `queue '${queue}' cannot be re-partitioned: ${reason}`);
  }
}

/**
 * A Queue or Worker opened a queue with another partition count than the one recorded at the
 * queue's first use. Nothing was written: jobs in a partition no worker reads would wait forever.
 */
export class PartitionMismatchError extends ConfigMismatchError {
  declare readonly stored: number;
  declare readonly wanted: number;
  constructor(queue: string, stored: number, wanted: number) {
    super(
      queue,
      'partitions',
      stored,
      wanted,
      `queue '${queue}' has partitions: ${stored} but this client uses partitions: ${wanted}; give every Queue and Worker of the queue the same partitions; to grow a running queue call queue.repartition(n) (delayq repartition <queue> --to n), which every client then follows`,
      'DELAYQ_PARTITION_MISMATCH',
    );
  }
}

/**
 * A client (Queue, Worker, Scheduler, CLI, dashboard) opened a queue whose jobs are stored in an
 * older data layout than this version of delayq reads, or one that `delayq migrate` is converting
 * right now. Nothing was written. `layout` is the queue's layout (1); `migrating`, when set, says
 * since when (server ms) and by whom the conversion runs.
 */
export class UnsupportedLayoutError extends DelayqError {
  constructor(
    readonly queue: string,
    readonly layout: number,
    readonly migrating: { readonly since: number; readonly by: string } | null = null,
  ) {
    super(
      'DELAYQ_UNSUPPORTED_LAYOUT',
      migrating
        ? `queue '${queue}' is in layout ${layout} (delayq 0.1) and being migrated since ${new Date(migrating.since).toISOString()} by ${migrating.by}; wait for \`delayq migrate ${queue}\` to finish, or if it stopped, run \`delayq migrate ${queue} --resume\``
        : `queue '${queue}' is in layout ${layout} (delayq 0.1); stop its workers and producers and run \`delayq migrate ${queue}\` to convert it in place`,
    );
  }
}

/** A view (CLI, dashboard) was asked about a queue that has no config record and no jobs. */
export class UnknownQueueError extends DelayqError {
  constructor(readonly queue: string) {
    super(
      'DELAYQ_UNKNOWN_QUEUE',
      `no queue '${queue}' here: it has no config record (no Queue or Worker has opened it); check the name`,
    );
  }
}

/**
 * A tool (the CLI, the dashboard) cannot encode or decode a queue's jobs: the queue records a
 * codec it was not given. Nothing was written; `hint` says how to give it.
 */
export class CodecUnavailableError extends DelayqError {
  constructor(
    readonly queue: string,
    readonly codec: string,
    hint: string,
  ) {
    super(
      'DELAYQ_CODEC_UNAVAILABLE',
      `queue '${queue}' records codec '${codec}', which is not loaded here: ${hint}; nothing was written`,
    );
  }
}

/**
 * Thrown by a handler to end its job for good: the job goes to the dead set at once with this
 * error as its reason, whatever attempts it has left (a bad address, a refused card). Thrown after
 * the lease was lost, it is refused like any late result.
 */
export class UnrecoverableError extends DelayqError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('DELAYQ_UNRECOVERABLE', message, options);
  }
}

/**
 * The handler asked to end the job for good: an UnrecoverableError, or one from another copy of
 * the package (a bundled dependency) that carries its code.
 */
export function isUnrecoverable(error: Error): boolean {
  return error instanceof UnrecoverableError || (error as { code?: unknown }).code === 'DELAYQ_UNRECOVERABLE';
}

/**
 * The reason a running job's `job.signal` aborts with when the job was cancelled (issue 15): stop
 * work; the job ends cancelled, and whatever the handler returns after this is not applied.
 */
export class CancelledError extends DelayqError {
  constructor(readonly jobId: string) {
    super(
      'DELAYQ_CANCELLED',
      `job ${jobId} was cancelled while it ran; stop its work: the job will not be completed, retried or dead-lettered`,
    );
  }
}

/** A `job.progress()` value encodes to more than the cap; nothing was written. */
export class ProgressTooLargeError extends DelayqError {
  constructor(
    readonly jobId: string,
    readonly size: number,
    readonly limit: number,
  ) {
    super(
      'DELAYQ_PROGRESS_TOO_LARGE',
      `progress of job ${jobId} encodes to ${size} bytes of JSON, over the cap of ${limit} bytes; nothing was written. Report a small summary (a percentage, a count, a stage name)`,
    );
  }
}

/**
 * A `job.log()` line over a cap (issue 33): longer than the bytes a line may have, or one more than
 * the lines an attempt may write. Nothing was written.
 */
export class LogLimitError extends DelayqError {
  constructor(
    readonly jobId: string,
    /** Which cap: 'line-bytes' (the line is too long) or 'lines' (the attempt wrote its lines already). */
    readonly cap: 'line-bytes' | 'lines',
    /** The line's size in bytes of UTF-8 ('line-bytes'), or the lines the attempt has ('lines'). */
    readonly size: number,
    readonly limit: number,
  ) {
    super(
      'DELAYQ_LOG_LIMIT',
      cap === 'line-bytes'
        ? `log line of job ${jobId} is ${size} bytes of UTF-8, over the cap of ${limit} bytes; nothing was written. Log a short line (a step, a count, an id); report structured state with job.progress()`
        : `job ${jobId} has written its ${limit} log lines for this attempt (the cap); nothing was written. Log the steps that matter; report a running count with job.progress()`,
    );
  }
}

/**
 * queue.addFlow(): a job of the flow has an id that exists (waiting, running, ended and still
 * kept, or remembered as completed). A flow is written whole or not at all: nothing was written.
 */
export class FlowExistsError extends DelayqError {
  constructor(readonly id: string) {
    super(
      'DELAYQ_FLOW_EXISTS',
      `addFlow: a job with id ${JSON.stringify(id)} exists, so the flow was not added (nothing was written); give its jobs new ids, or leave ids out`,
    );
  }
}

/**
 * queue.addFlow(): a child names another queue that a flow cannot span (README, "Flows"): on
 * Redis Cluster ('cluster': two queues are two hash tags, two slots no one script can update
 * together, so a child's end could not count for its parent exactly), or a queue that is
 * partitioned, uses the wheel strategy, records another codec than the parent's queue (the
 * parent decodes its children's results with its own), or was never opened ('unknown'). Nothing
 * was written.
 */
export class FlowQueueError extends DelayqError {
  constructor(
    readonly queue: string,
    readonly reason: 'cluster' | 'partitioned' | 'wheel' | 'codec' | 'unknown',
    detail: string,
  ) {
    super(
      'DELAYQ_FLOW_QUEUE',
      `addFlow: a child in queue ${JSON.stringify(queue)} is refused: ${detail}; nothing was written`,
    );
  }
}
