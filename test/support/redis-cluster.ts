/**
 * A throwaway Redis Cluster for tests and benchmarks: `masters` masters with `replicasPerMaster`
 * replicas each (3 + 3 by default), every node a redis-server on free loopback ports in its own
 * temp dir, joined with `redis-cli --cluster create`. Nodes are killed and stopped by pid only;
 * every wait is bounded.
 */
import { execFile } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { ask, until } from './probe.js';
import { freePort, startRedis, type RedisServer } from './redis-server.js';

const HOST = '127.0.0.1';
const SLOTS = 16_384;

/** One node of the cluster. */
export interface ClusterNode {
  readonly host: string;
  readonly port: number;
  /** The cluster bus port (node-to-node gossip). */
  readonly busPort: number;
  readonly url: string;
  readonly pid: number;
  /** The node's cluster id (CLUSTER MYID). */
  readonly id: string;
  /** Its data dir (redis.log is there). */
  readonly dir: string;
}

/** A master, the slot ranges it serves and its replicas, as a live node sees them. */
export interface ClusterShard {
  readonly master: ClusterNode;
  readonly replicas: readonly ClusterNode[];
  readonly slots: ReadonlyArray<readonly [number, number]>;
}

/** Settings of startRedisCluster. */
export interface RedisClusterOptions {
  /** Masters (at least 3, as redis-cli requires). Default 3. */
  masters?: number;
  /** Replicas per master. Default 1. */
  replicasPerMaster?: number;
  /**
   * cluster-node-timeout: how long a node may be unreachable before it is failed over. Default
   * 2000 ms; failover then takes about this plus 1-2 s. Too low a value on a loaded machine fails
   * over healthy nodes.
   */
  nodeTimeoutMs?: number;
  /** Extra redis-server arguments for every node. */
  args?: string[];
  /** Bound on start-up (processes, create, convergence). Default 60 s. */
  startTimeoutMs?: number;
}

/** What killMaster observed. */
export interface Failover {
  /** The replica that took over. */
  readonly promoted: ClusterNode;
  /** When the master was killed (epoch ms, this machine's clock). */
  readonly killedAt: number;
  /** From the kill until the replica reported role:master. */
  readonly promotedAfterMs: number;
  /** From the kill until every live node agreed on the new owner and reported cluster_state:ok. */
  readonly settledAfterMs: number;
}

/** A running cluster. */
export interface RedisCluster {
  /** Every node started, dead or alive. */
  readonly nodes: readonly ClusterNode[];
  /** Seed nodes for a client: host and port of every node still running. */
  seeds(): Array<{ host: string; port: number }>;
  /** Whether the node's process still runs. */
  isAlive(node: ClusterNode): boolean;
  /** The current shards, as the first live node sees them. */
  shards(): Promise<ClusterShard[]>;
  /** The hash slot of `key` (CLUSTER KEYSLOT). */
  slotOf(key: string): Promise<number>;
  /** The shard whose master serves `key` now. */
  shardOf(key: string): Promise<ClusterShard>;
  /** Resolves when every live node reports cluster_state:ok, all slots served, and all agree on the owners. */
  waitUntilHealthy(opts?: { timeoutMs?: number }): Promise<void>;
  /**
   * SIGKILL `master` (by pid) and wait until one of its replicas has taken over and the cluster is
   * healthy again. Throws after `timeoutMs` (default 30 s).
   */
  killMaster(master: ClusterNode, opts?: { timeoutMs?: number }): Promise<Failover>;
  /**
   * Stop `master` from replicating to anyone: it refuses the replication handshake (ACL) and its
   * replica links are cut, so its writes from now on exist on it alone. The replicas keep their
   * data and can still be failed over to.
   */
  cutReplication(master: ClusterNode): Promise<void>;
  /** Stop every node (SIGTERM, SIGKILL after 5 s; by pid) and remove their dirs. */
  stop(): Promise<void>;
}

interface NodeLine {
  id: string;
  port: number;
  flags: Set<string>;
  masterId: string | null;
  slots: Array<[number, number]>;
}

/** Start a cluster and resolve once it is healthy with every replica attached. */
export async function startRedisCluster(options: RedisClusterOptions = {}): Promise<RedisCluster> {
  const masters = options.masters ?? 3;
  const replicasPerMaster = options.replicasPerMaster ?? 1;
  const nodeTimeoutMs = options.nodeTimeoutMs ?? 2_000;
  const startTimeoutMs = options.startTimeoutMs ?? 60_000;
  if (!Number.isInteger(masters) || masters < 3) throw new Error('a Redis Cluster needs at least 3 masters');
  const started = performance.now();
  const servers: Array<{ server: RedisServer; busPort: number }> = [];
  try {
    const total = masters * (1 + replicasPerMaster);
    const results = await Promise.allSettled(
      Array.from({ length: total }, () => startNode(nodeTimeoutMs, options.args ?? [])),
    );
    for (const result of results) if (result.status === 'fulfilled') servers.push(result.value);
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;

    await redisCli(
      [
        '--cluster',
        'create',
        ...servers.map((s) => `${HOST}:${s.server.port}`),
        '--cluster-replicas',
        String(replicasPerMaster),
        '--cluster-yes',
      ],
      Math.max(5_000, startTimeoutMs - (performance.now() - started)),
    );
    const nodes: ClusterNode[] = [];
    for (const { server, busPort } of servers) {
      const id = await ask(server.port, (r) => r.call('CLUSTER', 'MYID') as Promise<string>);
      nodes.push({
        host: HOST,
        port: server.port,
        busPort,
        url: server.url,
        pid: server.pid,
        id,
        dir: server.dir,
      });
    }
    const cluster = new RunningCluster(nodes, new Map(servers.map((s) => [s.server.port, s.server])));
    await cluster.waitUntilHealthy({
      timeoutMs: Math.max(5_000, startTimeoutMs - (performance.now() - started)),
      replicasPerMaster,
    });
    return cluster;
  } catch (err) {
    await Promise.all(servers.map((s) => s.server.stop()));
    throw err;
  }
}

class RunningCluster implements RedisCluster {
  readonly nodes: readonly ClusterNode[];
  private readonly dead = new Set<number>();

  constructor(
    nodes: ClusterNode[],
    private readonly servers: Map<number, RedisServer>,
  ) {
    this.nodes = nodes;
  }

  seeds(): Array<{ host: string; port: number }> {
    return this.live().map((n) => ({ host: n.host, port: n.port }));
  }

  isAlive(node: ClusterNode): boolean {
    return !this.dead.has(node.port);
  }

  async shards(): Promise<ClusterShard[]> {
    const lines = await this.view(this.firstLive());
    const byId = new Map(this.nodes.map((n) => [n.id, n]));
    const shards: ClusterShard[] = [];
    for (const line of lines) {
      if (!line.flags.has('master') || line.flags.has('fail') || line.slots.length === 0) continue;
      const master = byId.get(line.id);
      if (!master) throw new Error(`unknown master ${line.id} in CLUSTER NODES`);
      const replicas = lines
        .filter((l) => l.masterId === line.id && !l.flags.has('fail'))
        .map((l) => byId.get(l.id))
        .filter((n): n is ClusterNode => n !== undefined && this.isAlive(n));
      shards.push({ master, replicas, slots: line.slots });
    }
    return shards;
  }

  async slotOf(key: string): Promise<number> {
    return Number(await ask(this.firstLive().port, (r) => r.call('CLUSTER', 'KEYSLOT', key)));
  }

  async shardOf(key: string): Promise<ClusterShard> {
    const slot = await this.slotOf(key);
    const shard = (await this.shards()).find((s) => s.slots.some(([a, b]) => slot >= a && slot <= b));
    if (!shard) throw new Error(`no master serves slot ${slot}`);
    return shard;
  }

  async waitUntilHealthy({
    timeoutMs = 30_000,
    replicasPerMaster,
  }: { timeoutMs?: number; replicasPerMaster?: number } = {}): Promise<void> {
    await until(() => this.health(replicasPerMaster), timeoutMs, 'the cluster to be healthy');
  }

  async killMaster(master: ClusterNode, { timeoutMs = 30_000 } = {}): Promise<Failover> {
    const shard = (await this.shards()).find((s) => s.master.id === master.id);
    if (!shard) throw new Error(`node ${master.port} is not a master serving slots`);
    if (shard.replicas.length === 0)
      throw new Error(`master ${master.port} has no live replica to take over`);
    const server = this.servers.get(master.port);
    if (!server) throw new Error(`node ${master.port} was not started here`);
    const t0 = performance.now();
    const killedAt = Date.now();
    this.dead.add(master.port);
    await server.stop({ signal: 'SIGKILL', keepDir: true });
    const promoted = await until(
      async () => {
        for (const replica of shard.replicas) {
          const role = await ask(replica.port, (r) => r.info('replication')).catch(() => '');
          if (/^role:master\b/m.test(role)) return replica;
        }
        return null;
      },
      timeoutMs,
      `a replica of ${master.port} to take over`,
    );
    const promotedAfterMs = performance.now() - t0;
    await until(
      async () => {
        const health = await this.health();
        if (health !== true) return null;
        const owner = (await this.shards()).find((s) => s.master.id === promoted.id);
        return owner !== undefined && sameSlots(owner.slots, shard.slots);
      },
      Math.max(1_000, timeoutMs - promotedAfterMs),
      `the cluster to settle on ${promoted.port} as master`,
    );
    return { promoted, killedAt, promotedAfterMs, settledAfterMs: performance.now() - t0 };
  }

  async cutReplication(master: ClusterNode): Promise<void> {
    await ask(master.port, async (r) => {
      await r.call('ACL', 'SETUSER', 'default', '-psync', '-sync', '-replconf');
      await r.call('CLIENT', 'KILL', 'TYPE', 'replica');
    });
    const shard = (await this.shards()).find((s) => s.master.id === master.id);
    for (const replica of shard?.replicas ?? []) {
      await until(
        async () => /^master_link_status:down/m.test(await ask(replica.port, (r) => r.info('replication'))),
        5_000,
        `the link of ${replica.port} to ${master.port} to go down`,
      );
    }
  }

  async stop(): Promise<void> {
    await Promise.all([...this.servers.values()].map((s) => s.stop()));
    for (const node of this.nodes) this.dead.add(node.port);
  }

  private live(): ClusterNode[] {
    return this.nodes.filter((n) => this.isAlive(n));
  }

  private firstLive(): ClusterNode {
    const node = this.live()[0];
    if (!node) throw new Error('no cluster node is running');
    return node;
  }

  private async view(node: ClusterNode): Promise<NodeLine[]> {
    return parseNodes(await ask(node.port, (r) => r.call('CLUSTER', 'NODES') as Promise<string>));
  }

  /** True when healthy, else a string saying what is not yet. */
  private async health(replicasPerMaster?: number): Promise<true | string> {
    let reference: string | undefined;
    for (const node of this.live()) {
      let info: string;
      let lines: NodeLine[];
      try {
        info = await ask(node.port, (r) => r.call('CLUSTER', 'INFO') as Promise<string>);
        lines = await this.view(node);
      } catch (err) {
        return `${node.port} did not answer: ${String(err)}`;
      }
      if (!/^cluster_state:ok/m.test(info)) return `${node.port}: cluster_state not ok`;
      if (!new RegExp(`^cluster_slots_ok:${SLOTS}\\b`, 'm').test(info))
        return `${node.port}: slots not all ok`;
      const owners = lines
        .filter((l) => l.flags.has('master') && !l.flags.has('fail') && l.slots.length > 0)
        .map((l) => `${l.id}:${l.slots.map(([a, b]) => `${a}-${b}`).join(',')}`)
        .sort()
        .join(' ');
      if (reference === undefined) reference = owners;
      else if (owners !== reference) return `${node.port} disagrees on slot owners`;
      if (replicasPerMaster !== undefined) {
        for (const master of lines.filter((l) => l.flags.has('master') && l.slots.length > 0)) {
          const replicas = lines.filter((l) => l.masterId === master.id && !l.flags.has('fail'));
          if (replicas.length < replicasPerMaster)
            return `${node.port}: master ${master.port} lacks replicas`;
        }
      }
    }
    // Every live replica streams from its master (a fresh one has finished its first sync).
    for (const node of this.live()) {
      const info = await ask(node.port, (r) => r.info('replication')).catch(() => '');
      if (/^role:slave/m.test(info) && !/^master_link_status:up/m.test(info)) {
        return `replica ${node.port} is not linked to its master`;
      }
    }
    return true;
  }
}

async function startNode(
  nodeTimeoutMs: number,
  extraArgs: string[],
): Promise<{ server: RedisServer; busPort: number }> {
  // Both ports come from the kernel; either may be taken before redis binds it, so retry.
  for (let attempt = 1; ; attempt++) {
    const busPort = await freePort();
    try {
      const server = await startRedis({
        args: [
          '--cluster-enabled',
          'yes',
          '--cluster-config-file',
          'nodes.conf',
          '--cluster-node-timeout',
          String(nodeTimeoutMs),
          '--cluster-port',
          String(busPort),
          // A replica may take over however long its link was down: tests kill and cut on purpose.
          '--cluster-replica-validity-factor',
          '0',
          '--cluster-allow-replica-migration',
          'no',
          '--appendonly',
          'no',
          '--repl-diskless-sync-delay',
          '0',
          ...extraArgs,
        ],
      });
      return { server, busPort };
    } catch (err) {
      if (attempt >= 3) throw err;
    }
  }
}

function redisCli(args: string[], timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      'redis-cli',
      args,
      { timeout: Math.ceil(timeoutMs), killSignal: 'SIGKILL' },
      (err, stdout, stderr) => {
        if (err)
          reject(
            new Error(`redis-cli ${args.slice(0, 2).join(' ')} failed: ${err.message}\n${stdout}${stderr}`),
          );
        else resolve(stdout);
      },
    );
  });
}

function parseNodes(text: string): NodeLine[] {
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => {
      const [id = '', address = '', flags = '', master = '-', , , , , ...slots] = line.trim().split(' ');
      const port = Number(/:(\d+)@/.exec(address)?.[1] ?? 0);
      const ranges: Array<[number, number]> = [];
      for (const slot of slots) {
        if (slot.startsWith('[')) continue; // a slot being migrated
        const [a, b] = slot.split('-').map(Number);
        if (a !== undefined) ranges.push([a, b ?? a]);
      }
      return {
        id,
        port,
        flags: new Set(flags.split(',')),
        masterId: master === '-' ? null : master,
        slots: ranges,
      };
    });
}

function sameSlots(
  a: ReadonlyArray<readonly [number, number]>,
  b: ReadonlyArray<readonly [number, number]>,
): boolean {
  const key = (s: ReadonlyArray<readonly [number, number]>): string =>
    s
      .map(([x, y]) => `${x}-${y}`)
      .sort()
      .join(',');
  return key(a) === key(b);
}
