/**
 * A throwaway Sentinel-managed Redis for tests: a master, one replica and three sentinels, each a
 * redis-server on a free loopback port in its own temp dir, stopped by pid. Every wait is bounded.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { ask, until } from './probe.js';
import { startRedis, type RedisServer } from './redis-server.js';

const HOST = '127.0.0.1';

/** Settings of startRedisSentinel. */
export interface RedisSentinelOptions {
  /** The name the sentinels monitor the master under. Default 'delayq'. */
  masterName?: string;
  /** down-after-milliseconds: how long the master may be silent before it is failed over. Default 1000. */
  downAfterMs?: number;
  /** Bound on start-up. Default 30 s. */
  startTimeoutMs?: number;
}

/** What killMaster observed. */
export interface SentinelFailover {
  /** The replica that took over. */
  readonly promoted: RedisServer;
  /** When the master was killed (epoch ms, this machine's clock). */
  readonly killedAt: number;
  /** From the kill until the replica reported role:master. */
  readonly promotedAfterMs: number;
  /** From the kill until every live sentinel named the replica as master. */
  readonly settledAfterMs: number;
}

/** A running master, replica and three sentinels. */
export interface RedisSentinelSetup {
  readonly masterName: string;
  readonly master: RedisServer;
  readonly replica: RedisServer;
  readonly sentinels: readonly RedisServer[];
  /** ioredis options that reach the current master through the sentinels. */
  connectionOptions(): { sentinels: Array<{ host: string; port: number }>; name: string };
  /** The master's address as the first sentinel names it now. */
  currentMaster(): Promise<{ host: string; port: number }>;
  /** SIGKILL the master (by pid) and wait until the replica has taken over. Default bound 30 s. */
  killMaster(opts?: { timeoutMs?: number }): Promise<SentinelFailover>;
  /** Stop every process (SIGTERM, SIGKILL after 5 s; by pid) and remove their dirs. */
  stop(): Promise<void>;
}

/** Start a master, a replica and three sentinels; resolves once the sentinels see both and each other. */
export async function startRedisSentinel(options: RedisSentinelOptions = {}): Promise<RedisSentinelSetup> {
  const masterName = options.masterName ?? 'delayq';
  const downAfterMs = options.downAfterMs ?? 1_000;
  const timeoutMs = options.startTimeoutMs ?? 30_000;
  const started: RedisServer[] = [];
  const dirs: string[] = [];
  const stopAll = async (): Promise<void> => {
    await Promise.all(started.map((s) => s.stop()));
    await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
  };
  try {
    const replArgs = ['--repl-diskless-sync-delay', '0', '--appendonly', 'no'];
    const master = await startRedis({ args: replArgs });
    started.push(master);
    const replica = await startRedis({ args: [...replArgs, '--replicaof', HOST, String(master.port)] });
    started.push(replica);
    await until(
      async () => /^master_link_status:up/m.test(await ask(replica.port, (r) => r.info('replication'))),
      timeoutMs,
      'the replica to sync',
    );
    const sentinels: RedisServer[] = [];
    for (let i = 0; i < 3; i++) {
      const dir = await mkdtemp(join(tmpdir(), 'delayq-sentinel-'));
      dirs.push(dir);
      const configFile = join(dir, 'sentinel.conf');
      await writeFile(
        configFile,
        [
          `sentinel monitor ${masterName} ${HOST} ${master.port} 2`,
          `sentinel down-after-milliseconds ${masterName} ${downAfterMs}`,
          `sentinel failover-timeout ${masterName} 10000`,
          `sentinel parallel-syncs ${masterName} 1`,
          '',
        ].join('\n'),
      );
      const sentinel = await startRedis({ configFile, dir, args: ['--sentinel'] });
      started.push(sentinel);
      sentinels.push(sentinel);
    }
    // Sentinels find each other and the replica through the master (hello messages every 2 s).
    await until(
      async () => {
        for (const s of sentinels) {
          const fields = await sentinelMaster(s.port, masterName);
          if (fields['num-other-sentinels'] !== '2' || fields['num-slaves'] !== '1') return false;
        }
        return true;
      },
      timeoutMs,
      'the sentinels to see the replica and each other',
    );
    return new RunningSentinel(masterName, master, replica, sentinels, stopAll);
  } catch (err) {
    await stopAll();
    throw err;
  }
}

class RunningSentinel implements RedisSentinelSetup {
  constructor(
    readonly masterName: string,
    readonly master: RedisServer,
    readonly replica: RedisServer,
    readonly sentinels: readonly RedisServer[],
    private readonly stopAll: () => Promise<void>,
  ) {}

  connectionOptions(): { sentinels: Array<{ host: string; port: number }>; name: string } {
    return { sentinels: this.sentinels.map((s) => ({ host: HOST, port: s.port })), name: this.masterName };
  }

  async currentMaster(): Promise<{ host: string; port: number }> {
    const sentinel = this.sentinels[0];
    if (!sentinel) throw new Error('no sentinel');
    const [host = '', port = '0'] = (await ask(sentinel.port, (r) =>
      r.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', this.masterName),
    )) as string[];
    return { host, port: Number(port) };
  }

  async killMaster({ timeoutMs = 30_000 } = {}): Promise<SentinelFailover> {
    const t0 = performance.now();
    const killedAt = Date.now();
    await this.master.stop({ signal: 'SIGKILL', keepDir: true });
    await until(
      async () => /^role:master/m.test(await ask(this.replica.port, (r) => r.info('replication'))),
      timeoutMs,
      'the replica to be promoted',
    );
    const promotedAfterMs = performance.now() - t0;
    await until(
      async () => {
        for (const s of this.sentinels) {
          const [, port] = (await ask(s.port, (r) =>
            r.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', this.masterName),
          )) as string[];
          if (Number(port) !== this.replica.port) return false;
        }
        return true;
      },
      Math.max(1_000, timeoutMs - promotedAfterMs),
      'every sentinel to name the replica as master',
    );
    return { promoted: this.replica, killedAt, promotedAfterMs, settledAfterMs: performance.now() - t0 };
  }

  stop(): Promise<void> {
    return this.stopAll();
  }
}

async function sentinelMaster(port: number, name: string): Promise<Record<string, string>> {
  const flat = (await ask(port, (r) => r.call('SENTINEL', 'MASTER', name))) as string[];
  const fields: Record<string, string> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) fields[flat[i]!] = flat[i + 1]!;
  return fields;
}
