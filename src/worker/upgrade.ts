/**
 * Upgrading a payload written by an older schema version, one step at a time, before the handler
 * sees it.
 */
import { DelayqError } from '../errors.js';
import type { Migrations } from './options.js';

/** Run migrate[from], migrate[from + 1], ... until the payload is at version `to`. */
export function upgradePayload(payload: unknown, from: number, to: number, migrate: Migrations): unknown {
  let value = payload;
  for (let version = from; version < to; version++) {
    const step = migrate[version] as ((payload: unknown) => unknown) | undefined;
    if (!step) {
      throw new DelayqError(
        'DELAYQ_NO_MIGRATION',
        `payload is version ${from} but this worker expects ${to} and has no migrate[${version}] to upgrade version ${version} to ${version + 1}; add it, then retry the job from the dead set`,
      );
    }
    value = step(value);
  }
  return value;
}
