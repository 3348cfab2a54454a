/**
 * Cluster test helpers: one throwaway Redis Cluster per test file, and clients for it.
 */
import { Cluster } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import type { ClusterConnectionOptions } from '../../src/redis/connection.js';
import { startRedisCluster, type RedisCluster, type RedisClusterOptions } from '../support/redis-cluster.js';

/** Start a cluster for this test file (beforeAll) and stop it (afterAll), bounded. */
export function useRedisCluster(options: RedisClusterOptions = {}): {
  cluster: () => RedisCluster;
  /** The `connection` option for Queue and Worker: seeds of the live nodes. */
  connection: () => ClusterConnectionOptions;
  /** A fresh ioredis Cluster client for seeding and inspecting; close it with quit(). */
  client: () => Cluster;
} {
  let cluster: RedisCluster | undefined;
  beforeAll(async () => {
    cluster = await startRedisCluster({ startTimeoutMs: 60_000, ...options });
  }, 90_000);
  afterAll(async () => {
    await cluster?.stop();
  }, 30_000);
  const get = (): RedisCluster => {
    if (!cluster) throw new Error('cluster not started yet');
    return cluster;
  };
  return {
    cluster: get,
    connection: () => ({ cluster: get().seeds() }),
    client: () => new Cluster(get().seeds(), { redisOptions: { maxRetriesPerRequest: 1 } }),
  };
}
