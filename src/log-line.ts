/**
 * The caps and the check of a `job.log()` line (issue 33): a few short lines of an attempt's
 * story, kept with the job. The caps are passed to log.lua, which holds them for callers in other
 * languages too.
 */
import { LogLimitError, ValidationError } from './errors.js';

/** The longest line, in bytes of UTF-8. */
export const LOG_MAX_LINE_BYTES = 512;
/** Lines one attempt (one run of the handler) may write. */
export const LOG_MAX_LINES_PER_ATTEMPT = 20;
/** Lines a job keeps over all its attempts: a later attempt's lines push out the oldest attempts' first. */
export const LOG_MAX_LINES_PER_JOB = 50;

/**
 * Throws ValidationError unless `line` is one line of text (a string, not empty, well-formed
 * Unicode, no control character but tab), and LogLimitError when it is over LOG_MAX_LINE_BYTES.
 */
export function checkLogLine(jobId: string, line: unknown): asserts line is string {
  if (typeof line !== 'string') {
    throw new ValidationError(
      `job ${jobId}: a log line must be a string, got ${line === null ? 'null' : typeof line}; nothing was written`,
      'line',
    );
  }
  if (line.length === 0) {
    throw new ValidationError(`job ${jobId}: a log line is empty; nothing was written`, 'line');
  }
  // Control characters (line breaks, escape sequences) would make one line print as several, or
  // recolour a terminal, in `delayq show`; a lone surrogate would be stored as U+FFFD.
  if (/[^\P{Cc}\t]/u.test(line) || /\p{Cs}/u.test(line)) {
    throw new ValidationError(
      `job ${jobId}: a log line is one line of text, without line breaks or control characters (tab is allowed) and without lone surrogates; nothing was written. Log each line by itself`,
      'line',
    );
  }
  const size = Buffer.byteLength(line, 'utf8');
  if (size > LOG_MAX_LINE_BYTES) throw new LogLimitError(jobId, 'line-bytes', size, LOG_MAX_LINE_BYTES);
}
