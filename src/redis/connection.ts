/**
 * Turns the `connection` option into ioredis clients, and knows which of them delayq owns (and so
 * closes) and which the user passed in (and so leaves open).
 */
import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import { ValidationError } from '../errors.js';

/** A client delayq can run scripts on: a single node or a cluster. */
export type RedisClient = Redis | Cluster;

/**
 * Redis Cluster seed nodes, as redis:// URLs or host and port; the rest of the cluster is found
 * from them. Credentials and TLS of the first URL that has them apply to every node unless
 * `clusterOptions.redisOptions` sets its own.
 */
export interface ClusterConnectionOptions {
  cluster: ReadonlyArray<string | { host: string; port: number }>;
  /** ioredis Cluster options (per-node settings go in `redisOptions`). */
  clusterOptions?: ClusterOptions;
}

/**
 * A redis:// URL; ioredis options (with `sentinels` and `name` for a Sentinel-managed master);
 * `{ cluster: [...] }` seed nodes of a Redis Cluster; or a ready ioredis Redis or Cluster instance
 * (left open on close).
 */
export type ConnectionOption = string | RedisOptions | ClusterConnectionOptions | Redis | Cluster;

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
  if (typeof option === 'object' && option !== null && 'cluster' in option) {
    return { client: openCluster(option), owned: true };
  }
  if (typeof option === 'object' && option !== null) {
    return { client: new Redis({ ...option, ...extra }), owned: true };
  }
  throw new ValidationError(
    'connection must be a redis:// URL, ioredis options, { cluster: [...] }, or an ioredis Redis/Cluster instance',
  );
}

function openCluster(option: ClusterConnectionOptions): Cluster {
  const given: unknown = option.cluster;
  if (!Array.isArray(given) || given.length === 0) {
    throw new ValidationError(
      'connection.cluster must be a non-empty array of redis:// URLs or { host, port }',
    );
  }
  const redisOptions: RedisOptions = { ...option.clusterOptions?.redisOptions };
  const seeds = option.cluster.map((node, i) => {
    if (typeof node === 'string') {
      if (!/^rediss?:\/\//.test(node)) {
        throw new ValidationError(
          `connection.cluster[${i}] ${JSON.stringify(node)} is not a redis:// or rediss:// URL`,
        );
      }
      // ioredis applies a seed URL's credentials to that seed only; nodes found later need them too.
      const url = new URL(node);
      if (url.password && redisOptions.password === undefined) {
        redisOptions.password = decodeURIComponent(url.password);
        if (url.username) redisOptions.username = decodeURIComponent(url.username);
      }
      if (url.protocol === 'rediss:') redisOptions.tls ??= {};
      return node;
    }
    if (
      typeof node !== 'object' ||
      node === null ||
      typeof node.host !== 'string' ||
      !Number.isInteger(node.port)
    ) {
      throw new ValidationError(`connection.cluster[${i}] must be a redis:// URL or { host, port }`);
    }
    return { host: node.host, port: node.port };
  });
  return new Cluster(seeds, { ...CLUSTER_DEFAULTS, ...option.clusterOptions, redisOptions });
}

/**
 * ioredis gives a command 16 redirections 100 ms apart (about 2 s) to find its slot's master,
 * shorter than a failover (node timeout + election, several seconds): an ack would fail and its
 * job run again after the lease. These ride out about 15 s (scripts longer: src/redis/scripts.ts
 * sends one refused by a slot in motion again for up to 60 s). Resending is what ioredis does anyway
 * when a connection drops: ack, fail and extend recognise a repeat, and add keeps an existing id.
 */
const CLUSTER_DEFAULTS: ClusterOptions = {
  maxRedirections: 64,
  retryDelayOnFailover: 250,
  retryDelayOnClusterDown: 250,
  retryDelayOnTryAgain: 250,
};

/** Close a client delayq owns; leave a user's client open. */
export async function closeConnection(connection: Connection): Promise<void> {
  if (!connection.owned) return;
  try {
    await connection.client.quit();
  } catch {
    connection.client.disconnect();
  }
}
