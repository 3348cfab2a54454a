/**
 * Where a worker's warnings and unhandled errors go: the Logger a user may give, and the default,
 * the console filtered by DELAYQ_LOG_LEVEL.
 */

/** Where a worker's warnings and unhandled errors go. */
export interface Logger {
  /** Start-up facts, such as the claim strategy chosen. Optional: a logger without it gets none. */
  info?(message: string): void;
  warn(message: string): void;
  error(message: string, err?: unknown): void;
}

const LOG_LEVELS = ['info', 'warn', 'error', 'silent'] as const;

/**
 * The default logger: the console, from the level in DELAYQ_LOG_LEVEL (info, warn, error or
 * silent; default info) up. Read per message, so a test runner or a process can quiet it.
 */
export const consoleLogger: Logger = {
  info: (message) => logsAt('info') && console.info(`delayq: ${message}`),
  warn: (message) => logsAt('warn') && console.warn(`delayq: ${message}`),
  error: (message, err) => logsAt('error') && console.error(`delayq: ${message}`, err ?? ''),
};

function logsAt(level: (typeof LOG_LEVELS)[number]): boolean {
  const set = process.env['DELAYQ_LOG_LEVEL'] as (typeof LOG_LEVELS)[number] | undefined;
  const threshold = set !== undefined && LOG_LEVELS.includes(set) ? set : 'info';
  return LOG_LEVELS.indexOf(level) >= LOG_LEVELS.indexOf(threshold);
}
