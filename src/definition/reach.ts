/**
 * Reaching Redis before a client's first command: a server that is not there is reported at once
 * as a ConnectionError naming where it was looked for, instead of each command failing on its own
 * after ioredis's reconnect attempts (about 10 s).
 */
import { Cluster } from 'ioredis';
import { ConnectionError } from '../errors.js';
import type { RedisClient } from '../redis/connection.js';

/** Connection attempts that fail before the server counts as unreachable. */
const ATTEMPTS = 3;
/** The most a first connection may take, whatever ioredis is doing meanwhile. */
const TIMEOUT_MS = 5_000;

/** Where `client` connects, without credentials, for messages. */
export function describeTarget(client: RedisClient): string {
  // A Cluster keeps its seed nodes private; the caller knows which it gave.
  if (client instanceof Cluster) return 'the Redis Cluster (its seed nodes)';
  const o = client.options;
  if (o.path) return `unix:${o.path}`;
  return `${o.tls ? 'rediss' : 'redis'}://${o.host ?? '127.0.0.1'}:${o.port ?? 6379}`;
}

/**
 * Resolve once `client` is ready; reject with ConnectionError after ATTEMPTS failed connection
 * attempts, TIMEOUT_MS, or the client's end, whichever comes first.
 */
export function whenReachable(client: RedisClient): Promise<void> {
  if (client.status === 'ready') return Promise.resolve();
  if (client.status === 'wait') client.connect().catch(() => {});
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const errors: Error[] = [];
    const fail = (why: string): void => {
      const last = errors.at(-1)?.message ?? why;
      finish(
        new ConnectionError(
          `cannot reach Redis at ${describeTarget(client)}: ${last} (${errors.length} connection attempt${errors.length === 1 ? '' : 's'} over ${Date.now() - started} ms); check the connection option or REDIS_URL and that the server runs`,
          errors.length > 0 ? { cause: errors.at(-1) } : undefined,
        ),
      );
    };
    const onReady = (): void => finish();
    const onError = (err: Error): void => {
      errors.push(err);
      if (errors.length >= ATTEMPTS) fail('');
    };
    const onEnd = (): void => fail('the connection was closed');
    const timer = setTimeout(() => fail(`no connection within ${TIMEOUT_MS} ms`), TIMEOUT_MS);
    function finish(err?: Error): void {
      clearTimeout(timer);
      client.off('ready', onReady);
      client.off('error', onError);
      client.off('end', onEnd);
      if (err) reject(err);
      else resolve();
    }
    client.on('ready', onReady);
    client.on('error', onError);
    client.on('end', onEnd);
  });
}
