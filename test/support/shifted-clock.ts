/**
 * The environment that starts a child node process with its wall clock off (see shift-clock.mjs):
 * by a fixed offset, or by whatever offset a file holds at the moment (to step it mid-run).
 */
import { fileURLToPath, pathToFileURL } from 'node:url';

const PRELOAD = fileURLToPath(new URL('./shift-clock.mjs', import.meta.url));

/** Env for a child whose Date reads `offsetMs` ahead (negative: behind), plus the file's offset. */
export function shiftedClockEnv(clock: { offsetMs?: number; file?: string }): Record<string, string> {
  const preload = `--import ${pathToFileURL(PRELOAD).href}`;
  const inherited = process.env['NODE_OPTIONS'];
  return {
    NODE_OPTIONS: inherited ? `${inherited} ${preload}` : preload,
    DELAYQ_TEST_CLOCK_OFFSET_MS: String(clock.offsetMs ?? 0),
    ...(clock.file !== undefined && { DELAYQ_TEST_CLOCK_FILE: clock.file }),
  };
}
