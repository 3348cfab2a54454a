/**
 * A Redis Cluster of any number of masters (1 and 2 included, which `redis-cli --cluster create`
 * refuses), no replicas, on loopback: cluster-enabled redis-servers, the 16,384 slots split into
 * equal ranges (some slots placed on chosen masters), joined by CLUSTER MEET. For benches that
 * compare 1, 2, 4 and 8 masters alike.
 */
import { ask, until } from '../../test/support/probe.js';
import { freePort, startRedis, type RedisServer } from '../../src/testing/redis-server.js';

const SLOTS = 16_384;

/** One master of a loopback cluster. */
export interface LoopbackMaster {
  readonly port: number;
  readonly id: string;
  /** The slots it serves. */
  readonly slots: ReadonlySet<number>;
}

/** A running loopback cluster. */
export interface LoopbackCluster {
  readonly masters: readonly LoopbackMaster[];
  seeds(): Array<{ host: string; port: number }>;
  /** The master serving `slot`. */
  masterOf(slot: number): LoopbackMaster;
  stop(): Promise<void>;
}

/**
 * Start `count` masters serving equal slot ranges, except that master i also takes the slots of
 * `pinned[i]` (keys), and resolve once every node reports cluster_state:ok.
 */
export async function startLoopbackCluster(
  count: number,
  pinned: ReadonlyArray<readonly string[]> = [],
): Promise<LoopbackCluster> {
  const servers: RedisServer[] = [];
  const busPorts: number[] = [];
  try {
    for (let i = 0; i < count; i++) {
      busPorts.push(await freePort());
      servers.push(
        await startRedis({
          args: [
            '--cluster-enabled',
            'yes',
            '--cluster-config-file',
            'nodes.conf',
            '--cluster-port',
            String(busPorts[i]),
            // Alone, a node has no peer to learn its address from: it would report an empty IP.
            '--cluster-announce-ip',
            '127.0.0.1',
            '--appendonly',
            'no',
            '--save',
            '',
          ],
        }),
      );
    }
    const owner = new Array<number>(SLOTS);
    for (let i = 0; i < count; i++) {
      for (let slot = Math.floor((SLOTS * i) / count); slot < Math.floor((SLOTS * (i + 1)) / count); slot++)
        owner[slot] = i;
    }
    await ask(servers[0]!.port, async (r) => {
      for (const [i, keys] of pinned.entries())
        for (const key of keys) owner[Number(await r.call('CLUSTER', 'KEYSLOT', key))] = i;
    });
    const masters: LoopbackMaster[] = [];
    for (const [i, server] of servers.entries()) {
      const slots = owner.flatMap((o, slot) => (o === i ? [slot] : []));
      const id = await ask(server.port, async (r) => {
        await r.call('CLUSTER', 'ADDSLOTS', ...slots);
        return (await r.call('CLUSTER', 'MYID')) as string;
      });
      masters.push({ port: server.port, id, slots: new Set(slots) });
    }
    // The bus port is not port + 10000 here: MEET must be told it.
    for (const server of servers.slice(1)) {
      await ask(server.port, (r) => r.call('CLUSTER', 'MEET', '127.0.0.1', servers[0]!.port, busPorts[0]!));
    }
    await until(
      async () => {
        for (const server of servers) {
          const info = await ask(server.port, (r) => r.call('CLUSTER', 'INFO') as Promise<string>);
          if (!info.includes('cluster_state:ok')) return `${server.port}: not ok`;
          if (!info.includes(`cluster_known_nodes:${count}\r`)) return `${server.port}: not all nodes known`;
          if (!info.includes(`cluster_slots_ok:${SLOTS}\r`)) return `${server.port}: not all slots`;
        }
        return true;
      },
      30_000,
      `a ${count}-master cluster to be ok`,
    );
    return {
      masters,
      seeds: () => masters.map((m) => ({ host: '127.0.0.1', port: m.port })),
      masterOf: (slot) => {
        const master = masters.find((m) => m.slots.has(slot));
        if (!master) throw new Error(`no master serves slot ${slot}`);
        return master;
      },
      stop: async () => {
        await Promise.all(servers.map((s) => s.stop()));
      },
    };
  } catch (err) {
    await Promise.all(servers.map((s) => s.stop()));
    throw err;
  }
}
