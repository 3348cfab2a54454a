/**
 * The one table from named script errors (`redis.error_reply('DELAYQ_<NAME> detail')`) to error
 * classes. Scripts never return bare numeric error codes.
 */
import { DelayqError } from '../errors.js';

/** Error codes a script may raise, and the class each becomes. */
const SCRIPT_ERRORS: Record<string, (detail: string, scriptName: string) => DelayqError> = {
  DELAYQ_LEASE_LOST: (detail) => new ScriptLeaseLost(detail),
};

/**
 * Raised by token-checked scripts; the caller knows the job id and turns it into a LeaseLostError.
 */
export class ScriptLeaseLost extends DelayqError {
  constructor(readonly detail: string) {
    super('DELAYQ_LEASE_LOST', `lease lost: ${detail}`);
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
