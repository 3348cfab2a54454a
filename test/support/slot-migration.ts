/**
 * Moving one hash slot of a live test cluster from its master to another, the way
 * `redis-cli --cluster reshard` does: SETSLOT IMPORTING on the target, MIGRATING on the source,
 * MIGRATE ... KEYS in batches until the slot is empty on the source, then SETSLOT NODE on the
 * target, the source and every other master. Between batches the slot's keys are split between
 * the two nodes: a script whose keys are not all on one node is refused there (ASK or TRYAGAIN),
 * which is the window the slot-migration test exercises. Every step is bounded.
 */
import { performance } from 'node:perf_hooks';
import { ask } from './probe.js';
import type { ClusterNode, RedisCluster } from './redis-cluster.js';

/** Settings of migrateSlot. */
export interface SlotMigrationOptions {
  /** Keys per MIGRATE. Default 4: small, so the slot stays split for several batches. */
  keysPerBatch?: number;
  /** Pause between batches, ms: how long the keys stay split. Default 100. */
  pauseMs?: number;
  /** MIGRATE's own timeout, ms. Default 5000. */
  migrateTimeoutMs?: number;
  /** Bound on the whole move. Default 60 s. */
  timeoutMs?: number;
}

/** What migrateSlot did. */
export interface SlotMigration {
  readonly slot: number;
  readonly from: ClusterNode;
  readonly to: ClusterNode;
  /** Keys moved, and in how many MIGRATE calls. */
  readonly keys: number;
  readonly batches: number;
  /** When the slot was marked MIGRATING and when every master had the new owner (epoch ms). */
  readonly startedAt: number;
  readonly endedAt: number;
}

/** Move `slot` from the master serving it to `to` (a master of the same cluster), under load. */
export async function migrateSlot(
  cluster: RedisCluster,
  slot: number,
  to: ClusterNode,
  options: SlotMigrationOptions = {},
): Promise<SlotMigration> {
  const keysPerBatch = options.keysPerBatch ?? 4;
  const pauseMs = options.pauseMs ?? 100;
  const migrateTimeoutMs = options.migrateTimeoutMs ?? 5_000;
  const deadline = performance.now() + (options.timeoutMs ?? 60_000);
  const shards = await cluster.shards();
  const from = shards.find((s) => s.slots.some(([a, b]) => slot >= a && slot <= b))?.master;
  if (!from) throw new Error(`no master serves slot ${slot}`);
  if (from.id === to.id) throw new Error(`slot ${slot} is already on ${to.port}`);

  const startedAt = Date.now();
  // The target first: a client sent there by ASK must find it importing.
  await ask(to.port, (r) => r.call('CLUSTER', 'SETSLOT', slot, 'IMPORTING', from.id));
  await ask(from.port, (r) => r.call('CLUSTER', 'SETSLOT', slot, 'MIGRATING', to.id));
  let keys = 0;
  let batches = 0;
  for (;;) {
    if (performance.now() > deadline) throw new Error(`slot ${slot}: migration did not finish in time`);
    const batch = (await ask(from.port, (r) =>
      r.call('CLUSTER', 'GETKEYSINSLOT', slot, keysPerBatch),
    )) as string[];
    if (batch.length === 0) break;
    await ask(from.port, (r) =>
      r.call('MIGRATE', to.host, to.port, '', 0, migrateTimeoutMs, 'KEYS', ...batch),
    );
    keys += batch.length;
    batches++;
    if (pauseMs > 0) await new Promise((resolve) => setTimeout(resolve, pauseMs));
  }
  // The new owner first (so it stops answering ASK-only), then the old one, then every other master.
  await ask(to.port, (r) => r.call('CLUSTER', 'SETSLOT', slot, 'NODE', to.id));
  await ask(from.port, (r) => r.call('CLUSTER', 'SETSLOT', slot, 'NODE', to.id));
  for (const shard of shards) {
    if (shard.master.id === from.id || shard.master.id === to.id) continue;
    await ask(shard.master.port, (r) => r.call('CLUSTER', 'SETSLOT', slot, 'NODE', to.id));
  }
  await cluster.waitUntilHealthy({ timeoutMs: Math.max(1_000, deadline - performance.now()) });
  return { slot, from, to, keys, batches, startedAt, endedAt: Date.now() };
}
