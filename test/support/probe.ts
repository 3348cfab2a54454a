/**
 * Helpers the test clusters share: a one-shot connection to a node, and bounded polling.
 */
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';

/** Run `fn` on a short-lived connection to 127.0.0.1:`port`; nothing retries or queues. */
export async function ask<T>(port: number, fn: (r: Redis) => Promise<T>): Promise<T> {
  const r = new Redis({
    host: '127.0.0.1',
    port,
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    connectTimeout: 2_000,
    commandTimeout: 5_000,
  });
  r.on('error', () => {});
  try {
    await r.connect();
    return await fn(r);
  } finally {
    r.disconnect();
  }
}

/**
 * Poll `check` every 100 ms until it returns something other than null, false or a string (a
 * reason it is not ready yet); errors count as not ready. Throws after `timeoutMs`.
 */
export async function until<T>(
  check: () => Promise<T | null | false | string>,
  timeoutMs: number,
  what: string,
): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      last = await check();
      if (last !== null && last !== false && typeof last !== 'string') return last as T;
    } catch (err) {
      last = err;
    }
    if (performance.now() >= deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} (last: ${String(last)})`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}
