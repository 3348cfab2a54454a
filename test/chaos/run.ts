/**
 * One chaos run: a redis-server of its own, worker processes each behind a fault proxy, a producer
 * adding jobs, and faults injected at random moments; then heal, drain, stop everything, and hand
 * the histories to the checker. Used by chaos.test.ts (bounded, in `npm test`) and long-run.ts
 * (`npm run test:chaos`).
 *
 * Every process and server started here is stopped in a finally block, passed or failed.
 */
import { copyFileSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { Queue } from '../../src/index.js';
import { idOfLease as memberId } from '../../src/members/lease.js';
import { queueKeys } from '../../src/redis/keys.js';
import { startRedis, type RedisServer } from '../support/redis-server.js';
import {
  checkChaos,
  isCompletedRecord,
  type ChaosReport,
  type FaultKind,
  type FaultRecord,
  type JobKind,
} from './checker.js';
import { readChaosLedger, type ChaosEntry, type ChaosPayload } from './ledger.js';
import { addChaosFlow, checkFlows, type FlowReport } from './flows.js';
import { FaultProxy } from './proxy.js';
import { killAllChaosWorkers, spawnChaosWorker, type ChaosWorker } from './worker-handle.js';
import { internals } from '../support/internals.js';

/** What to run. */
export interface ChaosOptions {
  jobs: number;
  /** Faults to inject, spread over `injectMs`. */
  faults: number;
  kinds: readonly FaultKind[];
  workers: number;
  concurrency: number;
  leaseMs: number;
  /** How long faults are injected and jobs added. */
  injectMs: number;
  /** Due times are spread over this long after each add. */
  dueSpreadMs: number;
  /** appendonly yes + appendfsync always; without it a Redis restart loses data (the control). */
  persistence: boolean;
  /** Share of jobs that always fail (dead after their attempts) and that fail once. */
  failAlwaysShare: number;
  failOnceShare: number;
  /** Attempts of normal jobs: enough that faults alone never exhaust them. */
  attempts: number;
  /** How long to wait for the queue to drain after the faults stop. */
  drainTimeoutMs: number;
  seed: number;
  log?: (line: string) => void;
  /** Keep the ledgers, run.json and the Redis log when the check fails (default true). */
  keepOnFailure?: boolean;
  /**
   * Share of jobs added with a group (default 0), spread over `groupCount` groups (default 8), and
   * the workers' groups.concurrency (default 2). After the run every group's running count in gc
   * must be back to 0 (issue 16: a slot is freed on every path, SIGKILL of its holder included).
   */
  groupShare?: number;
  groupCount?: number;
  groupConcurrency?: number;
  /**
   * Share of the producer's jobs that also start a flow (default 0): a parent with FLOW_CHILDREN
   * children (./flows.ts), whose jobs are accepted like the others; each parent must complete
   * once, after its children.
   */
  flowShare?: number;
}

/** What a run produced. */
export interface ChaosResult extends ChaosReport {
  faultsByKind: Record<FaultKind, number>;
  acceptedByKind: Record<JobKind, number>;
  durationMs: number;
  /** The flows' figures (flowShare > 0). */
  flows?: FlowReport;
}

/** A small seeded PRNG (mulberry32): the same seed gives the same jobs and fault plan. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

interface Slot {
  index: number;
  proxy: FaultProxy;
  proxyPort: number;
  generation: number;
  worker: ChaosWorker | undefined;
  /** Busy with a fault (stopped, respawning): not picked for another one. */
  busy: boolean;
}

/** Run chaos with `options`; resolves to the checker's report. */
export async function runChaos(options: ChaosOptions): Promise<ChaosResult> {
  const started = Date.now();
  const log = options.log ?? (() => {});
  const random = prng(options.seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  // Groups draw from their own sequence, so a seed's jobs, delays and faults are the same with
  // groups as without.
  const groupRandom = prng(options.seed + 7_919);
  const groupShare = options.groupShare ?? 0;
  const groupCount = options.groupCount ?? 8;
  const groupConcurrency = options.groupConcurrency ?? 2;
  // Flows draw from their own sequence too.
  const flowRandom = prng(options.seed + 104_729);
  const flowShare = options.flowShare ?? 0;
  const flowParents = new Set<string>();
  const ledgerDir = mkdtempSync(join(tmpdir(), 'delayq-chaos-'));
  const redisArgs = options.persistence
    ? ['--appendonly', 'yes', '--appendfsync', 'always']
    : ['--appendonly', 'no'];
  const servers: RedisServer[] = [];
  let server = await startRedis({ args: redisArgs });
  servers.push(server);
  const dataDir = server.dir;
  const name = `chaos-${options.seed}`;
  const keys = queueKeys(name);
  const admin = new Redis(server.url, { maxRetriesPerRequest: null });
  admin.on('error', () => {});
  const queue = new Queue<ChaosPayload>(name, {
    connection: { host: '127.0.0.1', port: server.port, maxRetriesPerRequest: null },
  });
  internals(queue).client.on('error', () => {});
  const slots: Slot[] = [];
  const faults: FaultRecord[] = [];
  const exits = new Map<number, number>();
  const plannedExits = new Set<number>();
  const pending: Array<Promise<unknown>> = [];
  const accepted = new Map<string, JobKind>();
  let stopping = false;
  let keepLedgers = false;

  const spawnInto = async (slot: Slot): Promise<void> => {
    slot.generation++;
    const worker = await spawnChaosWorker({
      url: slot.proxy.url(slot.proxyPort),
      queue: name,
      ledger: join(ledgerDir, `slot${slot.index}-gen${slot.generation}.jsonl`),
      concurrency: options.concurrency,
      leaseMs: options.leaseMs,
      closeTimeoutMs: Math.max(500, Math.floor(options.leaseMs / 2)),
      connectionName: `chaos-s${slot.index}-g${slot.generation}`,
      // Claim and reap eagerly, so a job whose holder died is taken soon after its lease allows.
      maxSleepMs: 250,
      reapIntervalMs: 250,
      ...(groupShare > 0 && { groupConcurrency }),
    });
    slot.worker = worker;
    void worker.exited.then(() => {
      exits.set(worker.pid, Date.now());
      // A process that died without a planned fault crashed: record it, and replace it.
      if (!plannedExits.has(worker.pid) && !stopping) {
        faults.push({ kind: 'crash', at: Date.now(), until: Date.now(), pids: [worker.pid] });
        log(`worker ${worker.pid} (slot ${slot.index}) crashed; respawning`);
        pending.push(respawn(slot));
      }
    });
  };
  const harnessErrors: string[] = [];
  // Never rejects: a replacement that fails to start is a harness error, reported with the result.
  const respawn = async (slot: Slot): Promise<void> => {
    slot.busy = true;
    try {
      await spawnInto(slot);
    } catch (err) {
      if (!stopping)
        harnessErrors.push(`slot ${slot.index}: ${err instanceof Error ? err.message : String(err)}`);
    } finally {
      slot.busy = false;
    }
  };
  try {
    for (let i = 0; i < options.workers; i++) {
      const proxy = new FaultProxy({ host: '127.0.0.1', port: server.port });
      slots.push({
        index: i,
        proxy,
        proxyPort: await proxy.listen(),
        generation: 0,
        worker: undefined,
        busy: false,
      });
    }
    await Promise.all(slots.map((slot) => spawnInto(slot)));
    log(`${slots.length} workers ready; redis on ${server.port}; ledgers in ${ledgerDir}`);

    // --- Producer: all jobs over the first 70% of the injection window, idempotent retries. ---
    const produce = async (): Promise<void> => {
      const batch = 100;
      const batches = Math.ceil(options.jobs / batch);
      const spacing = (options.injectMs * 0.7) / batches;
      for (let b = 0; b < batches; b++) {
        const jobs: Array<{
          id: string;
          kind: JobKind;
          payload: ChaosPayload;
          attempts: number;
          delay: number;
          group?: string;
        }> = [];
        for (let n = b * batch; n < Math.min(options.jobs, (b + 1) * batch); n++) {
          const roll = random();
          const kind: JobKind =
            roll < options.failAlwaysShare
              ? 'failAlways'
              : roll < options.failAlwaysShare + options.failOnceShare
                ? 'failOnce'
                : 'normal';
          const payload: ChaosPayload = { ms: 5 + Math.floor(random() * 150) };
          if (kind === 'failAlways') payload.failAlways = true;
          if (kind === 'failOnce') payload.failOnce = true;
          jobs.push({
            id: `j${n}`,
            kind,
            payload,
            attempts: kind === 'failAlways' ? 3 : options.attempts,
            delay: Math.floor(random() * options.dueSpreadMs),
            ...(groupRandom() < groupShare && { group: `t${Math.floor(groupRandom() * groupCount)}` }),
          });
        }
        // A batch that failed may or may not have been written: send the same ids again. An id
        // that exists comes back created: false, which for our own unique ids means accepted.
        for (let tries = 1; ; tries++) {
          try {
            await queue.addBulk(
              jobs.map((j) => ({
                payload: j.payload,
                opts: {
                  id: j.id,
                  delay: j.delay,
                  attempts: j.attempts,
                  ...(j.group !== undefined && { group: j.group }),
                },
              })),
            );
            for (const j of jobs) accepted.set(j.id, j.kind);
            break;
          } catch (err) {
            if (tries >= 50) throw err;
            await sleep(200);
          }
        }
        for (const j of jobs) {
          if (!(flowRandom() < flowShare)) continue;
          const id = `f${j.id}`;
          for (const added of await addChaosFlow(queue, id, flowRandom, options.attempts, 200)) {
            accepted.set(added, 'normal');
          }
          flowParents.add(id);
        }
        await sleep(spacing);
      }
    };
    const producing = produce();

    // --- Faults --------------------------------------------------------------------------------
    const inject = async (kind: FaultKind): Promise<void> => {
      const at = Date.now();
      if (kind === 'redis-restart') {
        await server.stop({ keepDir: true, signal: 'SIGKILL' });
        await sleep(200 + Math.floor(random() * 300));
        server = await startRedis({ args: redisArgs, port: server.port, dir: dataDir });
        servers.push(server);
        faults.push({ kind, at, until: Date.now(), pids: 'all' });
        return;
      }
      const free = slots.filter((s) => !s.busy && s.worker?.alive());
      if (free.length === 0) return;
      const slot = pick(free);
      const worker = slot.worker!;
      const lease = options.leaseMs;
      switch (kind) {
        case 'kill': {
          plannedExits.add(worker.pid);
          slot.busy = true;
          await worker.kill();
          faults.push({ kind, at, until: Date.now(), pids: [worker.pid] });
          pending.push(respawn(slot));
          return;
        }
        case 'term': {
          plannedExits.add(worker.pid);
          slot.busy = true;
          const stopped = worker.stop().then(
            () => {
              faults.push({ kind, at, until: Date.now(), pids: [worker.pid] });
              return respawn(slot);
            },
            (err: unknown) => harnessErrors.push(`SIGTERM of ${worker.pid}: ${String(err)}`),
          );
          pending.push(stopped);
          return;
        }
        case 'stop': {
          const ms = Math.floor(lease * (0.5 + random() * 1.5));
          slot.busy = true;
          worker.signal('SIGSTOP');
          faults.push({ kind, at, until: at + ms, pids: [worker.pid] });
          pending.push(
            sleep(ms).then(() => {
              worker.signal('SIGCONT');
              slot.busy = false;
            }),
          );
          return;
        }
        case 'stall': {
          const ms = Math.floor(lease * (0.3 + random() * 1.5));
          slot.proxy.stall(ms);
          faults.push({ kind, at, until: at + ms, pids: [worker.pid] });
          return;
        }
        case 'reset':
          slot.proxy.reset();
          faults.push({ kind, at, until: at, pids: [worker.pid] });
          return;
        case 'client-kill': {
          const list = (await admin.client('LIST')) as string;
          const ids = list
            .split('\n')
            .filter((line) => line.includes(` name=${worker.config.connectionName} `))
            .map((line) => /(?:^|\s)id=(\d+)/.exec(line)?.[1])
            .filter((id): id is string => id !== undefined);
          for (const id of ids) await admin.client('KILL', 'ID', id);
          faults.push({ kind, at, until: at, pids: [worker.pid] });
          return;
        }
        default:
          return;
      }
    };
    // Every kind in turn (in a seeded order), so a run with at least as many faults as kinds
    // injects each of them.
    const order = [...options.kinds].sort(() => random() - 0.5);
    const gap = options.injectMs / Math.max(1, options.faults);
    for (let i = 0; i < options.faults; i++) {
      await sleep(Math.floor(gap * (0.5 + random())));
      const kind = order[i % order.length]!;
      await inject(kind);
      log(`fault ${i + 1}/${options.faults}: ${kind}`);
    }
    await producing;
    log(`producer done: ${accepted.size} accepted`);

    // --- Heal and drain ------------------------------------------------------------------------
    for (const slot of slots) {
      slot.proxy.heal();
      slot.worker?.signal('SIGCONT');
    }
    await Promise.all(pending.splice(0));
    const drainDeadline = Date.now() + options.drainTimeoutMs;
    let left = Infinity;
    while (Date.now() < drainDeadline) {
      const sizes = await Promise.all(
        [keys.waiting, keys.prioWaiting, keys.prioReady, keys.leases, keys.flowsWaiting].map((key) =>
          admin.zcard(key),
        ),
      );
      left = sizes.reduce((a, b) => a + b, 0);
      if (left === 0) break;
      await sleep(250);
    }
    log(`drained: ${left} left after ${Date.now() - started} ms`);

    // --- Stop, collect, check ------------------------------------------------------------------
    stopping = true;
    await Promise.all(pending.splice(0));
    await Promise.all(
      slots.map(async (slot) => {
        const worker = slot.worker;
        if (!worker?.alive()) return;
        plannedExits.add(worker.pid);
        await worker.stop();
      }),
    );
    for (const slot of slots) {
      const pid = slot.worker?.pid;
      if (pid !== undefined && !exits.has(pid)) exits.set(pid, Date.now());
    }
    // Waiting ids (s; "<prio>:<id>" in p and r) and running ones (lease members "<token>|<id>").
    const unfinished = [
      ...(await admin.zrange(keys.waiting, 0, -1)),
      ...[
        ...(await admin.zrange(keys.prioWaiting, 0, -1)),
        ...(await admin.zrange(keys.prioReady, 0, -1)),
      ].map((member) => member.slice(member.indexOf(':') + 1)),
      ...(await admin.zrange(keys.leases, 0, -1)).map(memberId),
      // Flow parents still waiting for their children.
      ...(await admin.zrange(keys.flowsWaiting, 0, -1)),
      // Grouped waiting jobs: "<group>\0<due: 6 bytes><id>" in gq.
      ...(await admin.zrangeBuffer(keys.groupJobs, 0, -1)).map((member) =>
        member.subarray(member.indexOf(0) + 1 + 6).toString(),
      ),
    ];
    // Every group's running count must be back to 0: a slot left counted would hold the group
    // back for ever. "<group>\0l" fields are rate buckets, not counts.
    const groupSlots = Object.entries(await admin.hgetall(keys.groupCounts)).filter(
      ([field, count]) => !field.includes('\0') && Number(count) !== 0,
    );
    // Completed records: the workers keep every one for the run (rememberCompleted in chaos-worker).
    const completedIds = await admin.zrange(keys.completed, 0, -1);
    const completedRecords =
      completedIds.length > 0 ? await admin.hmgetBuffer(keys.records, ...completedIds) : [];
    const completed = new Set(completedIds.filter((_, i) => isCompletedRecord(completedRecords[i])));
    const deadIds = await admin.zrange(keys.dead, 0, -1);
    const reasons = deadIds.length > 0 ? await admin.hmget(keys.errors, ...deadIds) : [];
    const dead = new Map(
      deadIds.map((id, i) => {
        const raw = reasons[i];
        let reason = '';
        try {
          const message = raw ? (JSON.parse(raw) as { message?: unknown }).message : undefined;
          reason = typeof message === 'string' ? message : '';
        } catch {
          reason = raw ?? '';
        }
        return [id, reason];
      }),
    );
    const entries: ChaosEntry[] = readdirSync(ledgerDir)
      .filter((f) => f.endsWith('.jsonl'))
      .flatMap((f) => readChaosLedger(join(ledgerDir, f)));
    if (harnessErrors.length > 0) throw new Error(`chaos harness failed:\n${harnessErrors.join('\n')}`);
    const report = checkChaos({
      accepted,
      entries,
      faults,
      exits,
      dead,
      unfinished,
      completed,
      lingerMs: 2 * options.leaseMs + 2_000,
    });
    const flows = flowShare > 0 ? checkFlows(entries, flowParents) : undefined;
    if (flows && flows.violations.length > 0) {
      report.violations.push(...flows.violations);
      report.ok = false;
    }
    for (const [group, count] of groupSlots) {
      report.violations.push(`group ${group} still counts ${count} running job(s) after the run (gc)`);
      report.ok = false;
    }
    const faultsByKind = Object.fromEntries(
      (['kill', 'stop', 'term', 'client-kill', 'stall', 'reset', 'redis-restart', 'crash'] as const).map(
        (k) => [k, faults.filter((f) => f.kind === k).length],
      ),
    ) as Record<FaultKind, number>;
    if (!report.ok && options.keepOnFailure !== false) {
      // Keep everything needed to replay the check offline (checkChaos on run.json + the ledgers).
      keepLedgers = true;
      writeFileSync(
        join(ledgerDir, 'run.json'),
        JSON.stringify({
          options: { ...options, log: undefined },
          accepted: [...accepted],
          faults,
          exits: [...exits],
          dead: [...dead],
          unfinished,
          completed: [...completed],
          report,
        }),
      );
      log(`ledgers, run.json and Redis logs kept for inspection in ${ledgerDir}`);
    }
    const acceptedByKind: Record<JobKind, number> = { normal: 0, failOnce: 0, failAlways: 0, poison: 0 };
    for (const kind of accepted.values()) acceptedByKind[kind]++;
    return {
      ...report,
      faultsByKind,
      acceptedByKind,
      durationMs: Date.now() - started,
      ...(flows && { flows }),
    };
  } finally {
    stopping = true;
    await killAllChaosWorkers();
    await Promise.allSettled(pending);
    await Promise.all(slots.map((slot) => slot.proxy.close().catch(() => {})));
    await queue.close().catch(() => {});
    admin.disconnect();
    for (const s of servers) await s.stop({ keepDir: true }).catch(() => {});
    if (keepLedgers) {
      try {
        copyFileSync(join(dataDir, 'redis.log'), join(ledgerDir, 'redis.log'));
      } catch {
        // No log to keep.
      }
    }
    rmSync(dataDir, { recursive: true, force: true });
    if (!keepLedgers) rmSync(ledgerDir, { recursive: true, force: true });
  }
}
