/**
 * Preload (`node --import`) that puts this process's wall clock off, as a skewed or stepped machine
 * clock would: `Date.now()`, `new Date()`, `Date()` and `performance.timeOrigin` read the offset;
 * timers and `performance.now()` (the monotonic clock) run on untouched, as they do when NTP steps
 * a machine's clock. What the clock-skew tests check is that a worker's wall clock does not matter
 * (only Redis's TIME does), so shifting it from inside Node is the whole of what they need, and no
 * system tool (libfaketime) has to be installed.
 *
 * Plain JavaScript, not TypeScript: it is loaded through NODE_OPTIONS, before tsx is registered.
 *
 * - DELAYQ_TEST_CLOCK_OFFSET_MS: a fixed offset in ms (e.g. 300000 for a clock 5 min ahead).
 * - DELAYQ_TEST_CLOCK_FILE: a file holding the offset in ms, read again at most every 5 ms, so a
 *   test steps the clock by writing a new number into it.
 */
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import process from 'node:process';

const RealDate = globalThis.Date;
const realNow = RealDate.now.bind(RealDate);
const fixed = Number(process.env.DELAYQ_TEST_CLOCK_OFFSET_MS ?? '0');
const file = process.env.DELAYQ_TEST_CLOCK_FILE;
if (!Number.isFinite(fixed)) {
  throw new Error(`shift-clock: DELAYQ_TEST_CLOCK_OFFSET_MS is not a number of ms: ${fixed}`);
}

/** Re-reading the file on every call would make each Date.now() a syscall; 5 ms stale is nothing here. */
const FILE_READ_EVERY_MS = 5;
let fromFile = 0;
let readAt = -Infinity;

function offset() {
  if (file === undefined) return fixed;
  const at = performance.now();
  if (at - readAt >= FILE_READ_EVERY_MS) {
    readAt = at;
    const value = Number(readFileSync(file, 'utf8').trim());
    // A file caught half-written reads as NaN or empty: keep the last offset.
    if (Number.isFinite(value)) fromFile = value;
  }
  return fixed + fromFile;
}

const now = () => realNow() + offset();

globalThis.Date = new Proxy(RealDate, {
  // Only the no-argument form reads the clock; new Date(ms) and new Date(string) are left alone.
  construct: (target, args, newTarget) =>
    Reflect.construct(target, args.length === 0 ? [now()] : args, newTarget),
  apply: () => new RealDate(now()).toString(),
  get: (target, prop, receiver) => (prop === 'now' ? now : Reflect.get(target, prop, receiver)),
});

// Date.now() and performance.timeOrigin + performance.now() agree at start, as on a skewed machine.
const timeOrigin = performance.timeOrigin + fixed;
Object.defineProperty(performance, 'timeOrigin', { get: () => timeOrigin, configurable: true });
