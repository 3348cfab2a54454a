/**
 * Turns the `connection` option into ioredis clients, and knows which of them delayq owns (and so
 * closes) and which the user passed in (and so leaves open).
 */
import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { ValidationError } from '../errors.js';

/** A client delayq can run scripts on: a single node or a cluster. */
export type RedisClient = Redis | Cluster;

/** A redis:// URL, ioredis options, or a ready ioredis Redis or Cluster instance (left open on close). */
export type ConnectionOption = string | RedisOptions | Redis | Cluster;

/** A client and whether delayq created it. */
export interface Connection {
  readonly client: RedisClient;
  readonly owned: boolean;
}

/**
 * Open (or adopt) a client. `retryForever` keeps commands queued across reconnects instead of
 * failing them after ioredis's default 20 retries: a worker must outlive a Redis restart.
 */
export function openConnection(option: ConnectionOption | undefined, retryForever: boolean): Connection {
  if (option instanceof Redis || option instanceof Cluster) return { client: option, owned: false };
  const extra: RedisOptions = retryForever ? { maxRetriesPerRequest: null } : {};
  if (option === undefined) {
    return { client: new Redis(process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379', extra), owned: true };
  }
  if (typeof option === 'string') {
    if (!/^rediss?:\/\//.test(option)) {
      throw new ValidationError(
        `connection ${JSON.stringify(option)} is not a redis:// or rediss:// URL; pass a URL, ioredis options, or a Redis/Cluster instance`,
      );
    }
    return { client: new Redis(option, extra), owned: true };
  }
  if (typeof option === 'object' && option !== null) {
    return { client: new Redis({ ...option, ...extra }), owned: true };
  }
  throw new ValidationError(
    'connection must be a redis:// URL, ioredis options, or an ioredis Redis/Cluster instance',
  );
}

/** A second client to the same server(s), e.g. for SUBSCRIBE; always owned by delayq. */
export function duplicateClient(client: RedisClient): RedisClient {
  return client.duplicate();
}

/** Close a client delayq owns; leave a user's client open. */
export async function closeConnection(connection: Connection): Promise<void> {
  if (!connection.owned) return;
  try {
    await connection.client.quit();
  } catch {
    connection.client.disconnect();
  }
}
