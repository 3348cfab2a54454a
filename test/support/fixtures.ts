/**
 * Shared test helpers: one throwaway redis-server per test file, a unique queue name per test, and
 * bounded waiting for a condition instead of sleeping for a guess.
 */
import { randomBytes } from 'node:crypto';
import { Redis, type Cluster } from 'ioredis';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { startRedis, type RedisServer, type RedisServerOptions } from './redis-server.js';

/** Start a redis-server for this test file (beforeAll) and stop it (afterAll). */
export function useRedis(options: RedisServerOptions = {}): { server: () => RedisServer; url: () => string } {
  let server: RedisServer | undefined;
  beforeAll(async () => {
    server = await startRedis(options);
  });
  afterAll(async () => {
    await server?.stop();
  });
  const get = (): RedisServer => {
    if (!server) throw new Error('redis-server not started yet');
    return server;
  };
  return { server: get, url: () => get().url };
}

/** A queue name no other test uses. */
export function uniqueQueue(prefix = 'q'): string {
  return `${prefix}-${randomBytes(4).toString('hex')}`;
}

/** Poll `check` until it returns a truthy value or `timeoutMs` passes; returns that value. */
export async function waitFor<T>(
  check: () => T | Promise<T>,
  { timeoutMs = 10_000, intervalMs = 10, what = 'condition' } = {},
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let last: T | undefined;
  while (Date.now() < deadline) {
    last = await check();
    if (last) return last;
    await new Promise((r) => setTimeout(r, intervalMs));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} (last value: ${String(last)})`);
}

/** A plain client for inspecting Redis state in assertions; close it with quit(). */
export function inspector(url: string): Redis {
  return new Redis(url, { lazyConnect: false, maxRetriesPerRequest: 1 });
}

/** The server's clock in epoch ms (on a Cluster: some node's; they share this machine's clock). */
export async function serverNow(redis: Redis | Cluster): Promise<number> {
  const [s, us] = await redis.time();
  return Number(s) * 1000 + Math.floor(Number(us) / 1000);
}

/**
 * Clean-up steps for the current test, run in reverse order after it, and redis-servers started
 * with `args` for one test each (stopped by those steps): for tests that each need a server of
 * their own, such as one with commands renamed away to act as an older Redis.
 */
export function perTestServers(): {
  cleanup: Array<() => Promise<void>>;
  server: (args?: string[]) => Promise<RedisServer>;
} {
  const cleanup: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step();
  });
  return {
    cleanup,
    server: async (args = []) => {
      const s = await startRedis({ args });
      cleanup.push(() => s.stop());
      return s;
    },
  };
}
