/**
 * The one table from named script errors (`redis.error_reply('DELAYQ_<NAME> detail')`) to error
 * classes. Scripts never return bare numeric error codes.
 */
import { DelayqError, FlowExistsError, ValidationError } from '../errors.js';

/** Error codes a script may raise, and the class each becomes. */
const SCRIPT_ERRORS: Record<string, (detail: string, scriptName: string) => DelayqError> = {
  DELAYQ_LEASE_LOST: (detail) => new ScriptLeaseLost(detail),
  DELAYQ_WRONG_BUCKET: (detail) => new ScriptWrongBucket(detail),
  DELAYQ_LAYOUT_MISMATCH: (detail) => new ScriptLayoutMismatch(detail),
  DELAYQ_BAD_ARG: (detail, scriptName) => new ScriptBadArg(detail, scriptName),
  DELAYQ_CONFIG_MISMATCH: (detail) => new ScriptConfigMismatch(detail),
  DELAYQ_MIGRATING: (detail) => new ScriptMigrating(detail),
  DELAYQ_BAD_RECORD: (detail, scriptName) => new ScriptBadRecord(detail, scriptName),
  DELAYQ_BAD_CONFIG: (detail) => new ScriptBadConfig(detail),
  DELAYQ_LOG_FULL: (detail) => new ScriptLogFull(detail),
  DELAYQ_FLOW_EXISTS: (detail) => new FlowExistsError(detail),
  DELAYQ_REPARTITION_REFUSED: (detail) => new ScriptRepartitionRefused(detail),
};

/**
 * Raised (before anything is written) by repartition.lua when it refuses the count; the caller
 * knows the queue and turns this into a RepartitionRefusedError.
 */
export class ScriptRepartitionRefused extends DelayqError {
  constructor(readonly reason: string) {
    super('DELAYQ_REPARTITION_REFUSED', reason);
  }
}

/**
 * Raised (before anything is written) by log.lua when the run has written its lines already; the
 * caller knows the job id and turns this into a LogLimitError.
 */
export class ScriptLogFull extends DelayqError {
  /** The lines a run may write. */
  readonly max: number;
  constructor(readonly detail: string) {
    super('DELAYQ_LOG_FULL', `the attempt has written its ${detail} log lines`);
    this.max = Number(detail);
  }
}

/**
 * Raised (before anything is written) by config.lua when the queue's config record holds a value
 * of the wrong form, such as `version abc` or `partitions 01` (written by hand or by a client that
 * got it wrong): detail is "<key> <field> <value> is not <rule>".
 */
export class ScriptBadConfig extends DelayqError {
  constructor(readonly detail: string) {
    super(
      'DELAYQ_BAD_CONFIG',
      `the queue's config record is malformed: ${detail}; nothing was written. Fix that field with HSET (docs/PROTOCOL.md, "The queue's config record")`,
    );
  }
}

/**
 * Raised (before anything is written) by a script that met a job record it cannot read: an
 * unknown format byte, reserved flag bits (a newer delayq wrote it) or a truncated header.
 */
export class ScriptBadRecord extends DelayqError {
  constructor(
    readonly detail: string,
    readonly scriptName: string,
  ) {
    super(
      'DELAYQ_BAD_RECORD',
      `${scriptName}.lua cannot read a job record (${detail}); nothing was written (a newer delayq may have written it: upgrade this process)`,
    );
  }
}

/**
 * Raised (before anything is written) by a script whose arguments are malformed: the backstop for
 * callers with no TypeScript validation in front of them, such as producers in other languages.
 */
export class ScriptBadArg extends ValidationError {
  constructor(
    readonly detail: string,
    readonly scriptName: string,
  ) {
    super(`${scriptName}.lua refused its arguments (DELAYQ_BAD_ARG): ${detail}; nothing was written`);
  }
}

/**
 * Raised by token-checked scripts; the caller knows the job id and turns it into a LeaseLostError.
 */
export class ScriptLeaseLost extends DelayqError {
  constructor(readonly detail: string) {
    super('DELAYQ_LEASE_LOST', `lease lost: ${detail}`);
  }
}

/**
 * Raised (before anything is written) by a wheel-layout script that needs a bucket list the caller
 * did not pass; the wrapper calls again with `starts` added.
 */
export class ScriptWrongBucket extends DelayqError {
  /** Starts (epoch ms) of the buckets the script needed. */
  readonly starts: number[];
  constructor(readonly detail: string) {
    super('DELAYQ_WRONG_BUCKET', `script needs wheel buckets ${detail}`);
    this.starts = detail
      .split(',')
      .map(Number)
      .filter((n) => Number.isFinite(n));
  }
}

/** Raised by the schedule scripts when the queue's recorded layout is not the caller's; `stored` names it. */
export class ScriptLayoutMismatch extends DelayqError {
  constructor(readonly stored: string) {
    super('DELAYQ_LAYOUT_MISMATCH', `queue layout is ${stored}`);
  }
}

/**
 * Raised by config.lua when a value the client uses differs from the queue's recorded one; the
 * caller knows its own value and turns this into a ConfigMismatchError.
 */
export class ScriptConfigMismatch extends DelayqError {
  /** The config field, e.g. 'codec'. */
  readonly field: string;
  /** The recorded value. */
  readonly stored: string;
  constructor(readonly detail: string) {
    super('DELAYQ_CONFIG_MISMATCH', `queue config has ${detail}`);
    const space = detail.indexOf(' ');
    this.field = space < 0 ? detail : detail.slice(0, space);
    this.stored = space < 0 ? '' : detail.slice(space + 1);
  }
}

/**
 * Raised by config.lua and the migrate scripts while `delayq migrate` converts the queue (the config
 * record's `migrating` field, "<since ms>|<who>"); the caller knows the queue and turns this into
 * an UnsupportedLayoutError.
 */
export class ScriptMigrating extends DelayqError {
  /** Server ms the migration began. */
  readonly since: number;
  /** Who runs it (host and process, as `delayq migrate` recorded it). */
  readonly by: string;
  constructor(readonly detail: string) {
    super('DELAYQ_MIGRATING', `queue is being migrated: ${detail}`);
    const bar = detail.indexOf('|');
    this.since = Number(bar < 0 ? detail : detail.slice(0, bar));
    this.by = bar < 0 ? 'unknown' : detail.slice(bar + 1);
  }
}

/** Map a reply error to its named class; anything else is returned as it came. */
export function mapScriptError(err: unknown, scriptName: string): unknown {
  if (!(err instanceof Error)) return err;
  const match = /^(DELAYQ_[A-Z_]+)\s*(.*)$/s.exec(err.message);
  if (!match) return err;
  const make = SCRIPT_ERRORS[match[1] ?? ''];
  return make ? make(match[2] ?? '', scriptName) : err;
}
