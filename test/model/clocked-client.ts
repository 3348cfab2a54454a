/**
 * A test-only seam for the server clock, with nothing changed in src: a client that runs the real
 * delayq scripts with one line swapped. Every script reads "now" in `now_ms()` of prelude.lua,
 * through `local t = redis.call('TIME')`; here that line reads a counter key the test sets, so
 * time moves only when the model says so and every boundary (due == now, deadline == now) can be
 * hit exactly. Everything else in each script runs as shipped.
 *
 * The swap is checked: a script that still calls TIME after it, or a script this client does not
 * know, fails the test instead of silently running on the real clock.
 */
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Redis } from 'ioredis';
import { functionLibrary, script, type Script } from '../../src/redis/scripts.js';

/** The key holding the fake "now" in epoch ms (outside every queue's keys). */
export const CLOCK_KEY = 'dq-test:clock';

const TIME_LINE = "local t = redis.call('TIME')";
const FAKE_LINE =
  `local fake_ms = tonumber(redis.call('GET', '${CLOCK_KEY}')); ` +
  'local t = { math.floor(fake_ms / 1000), (fake_ms % 1000) * 1000 }';

const scriptsDir = fileURLToPath(new URL('../../src/scripts/', import.meta.url));

/** Names of every script the package ships (src/scripts/*.lua). */
export function shippedScriptNames(): string[] {
  return readdirSync(scriptsDir)
    .filter((f) => f.endsWith('.lua'))
    .map((f) => f.slice(0, -'.lua'.length))
    .sort();
}

interface Swapped {
  readonly original: Script;
  readonly source: string;
}

function swapClock(original: Script): Swapped {
  const parts = original.source.split(TIME_LINE);
  if (parts.length > 2) throw new Error(`${original.name}.lua reads TIME more than once; update the seam`);
  const source = parts.join(FAKE_LINE);
  if (/\bTIME\b/.test(source.replace(/--[^\n]*/g, ''))) {
    throw new Error(
      `${original.name}.lua still reads TIME after the swap; update test/model/clocked-client.ts`,
    );
  }
  return { original, source };
}

/**
 * Wrap `redis` so every delayq script it is asked to run (EVALSHA by the shipped SHA, EVAL of the
 * shipped source, or FCALL of its library function) runs with the fake clock instead. Other commands pass through untouched.
 */
export function clockedClient(
  redis: Redis,
  /** Change a script before it runs: only for tests that prove the model test catches a broken script. */
  mutate?: (name: string, source: string) => string,
): Redis {
  const bySha = new Map<string, Swapped>();
  const bySource = new Map<string, Swapped>();
  const byFunction = new Map<string, Swapped>();
  for (const name of shippedScriptNames()) {
    let swapped = swapClock(script(name));
    if (mutate) swapped = { ...swapped, source: mutate(name, swapped.source) };
    bySha.set(swapped.original.sha, swapped);
    bySource.set(swapped.original.source, swapped);
    const fn = functionLibrary().functions.get(name);
    if (fn !== undefined) byFunction.set(fn, swapped);
  }
  const callBuffer = async (command: string, ...args: unknown[]): Promise<unknown> => {
    const upper = command.toUpperCase();
    if (upper !== 'EVALSHA' && upper !== 'EVAL' && upper !== 'FCALL') {
      return redis.callBuffer(command, ...(args as string[]));
    }
    const [first, ...rest] = args;
    const swapped =
      upper === 'EVALSHA'
        ? bySha.get(String(first))
        : upper === 'EVAL'
          ? bySource.get(String(first))
          : byFunction.get(String(first));
    if (!swapped) throw new Error(`clockedClient: ${upper} of a script that is not a shipped delayq script`);
    // EVAL every time: the swapped source has its own SHA, and EVAL caches it on the server anyway.
    return redis.callBuffer('EVAL', swapped.source, ...(rest as string[]));
  };
  return new Proxy(redis, {
    get(target, prop) {
      if (prop === 'callBuffer') return callBuffer;
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}
