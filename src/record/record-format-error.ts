import { DelayqError } from '../errors.js';

/**
 * A record that this code cannot read: an unknown format byte, a reserved flag bit (a newer
 * format), or fewer bytes than its flags announce. Such a job is dead-lettered with this reason,
 * never guessed at.
 */
export class RecordFormatError extends DelayqError {
  constructor(message: string) {
    super('DELAYQ_RECORD_FORMAT', message);
  }
}
