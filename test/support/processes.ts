/**
 * Parent side of worker-process.ts: spawn delayq workers as real processes, wait until they claim,
 * signal them by pid (SIGKILL, SIGSTOP, SIGCONT, SIGTERM) and read their ledgers. Every process
 * spawned through useWorkerProcesses() is killed after each test, passed or failed.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach } from 'vitest';
import { readJsonLines } from './json-lines.js';
import { awaitReady, captureOutput } from './ready-line.js';

/** What worker-process.ts reads from argv[2] (JSON). */
export interface ChildConfig {
  url: string;
  queue: string;
  /** File the ledger lines are appended to. */
  ledger: string;
  concurrency: number;
  leaseMs: number;
  /** How long each handler run sleeps (ignoring job.signal). */
  sleepMs: number;
  workerId?: string;
  /** Worker options passed through when set (small values make a worker claim and reap eagerly). */
  maxSleepMs?: number;
  reapIntervalMs?: number;
  /** The worker's rate limit, passed through when set. */
  limit?: { max: number; per: number };
  /** The worker's group bounds and the queue's partitions, passed through when set. */
  groups?: { concurrency: number; limit?: { max: number; per: number } };
  partitions?: number;
}

/** One line of a worker process's ledger. Times named runAt/claimedAt are server clock; the rest local. */
export type LedgerEntry =
  | {
      phase: 'start';
      id: string;
      attempt: number;
      pid: number;
      start: number;
      runAt: number;
      claimedAt: number;
      /** The job's group, when it has one. */
      group?: string;
    }
  | { phase: 'end'; id: string; attempt: number; pid: number; start: number; end: number; group?: string }
  | { phase: 'completed'; id: string; attempt: number; pid: number; at: number }
  | { phase: 'failed'; id: string; attempt: number; pid: number; message: string; at: number }
  | { phase: 'dead'; id: string; attempt: number | null; pid: number; message: string; at: number }
  | { phase: 'error'; code: string | null; id: string | null; pid: number; message: string; at: number };

export type LedgerOf<P extends LedgerEntry['phase']> = Extract<LedgerEntry, { phase: P }>;

/** How to start one worker process. */
export interface SpawnWorkerOptions extends Partial<Omit<ChildConfig, 'url' | 'queue' | 'ledger'>> {
  url: string;
  queue: string;
  /** A command to run node under, e.g. ['faketime', '-f', '+5m']. */
  wrapper?: string[];
  /** Extra environment for the process. */
  env?: Record<string, string>;
  /** How long to wait for `ready`. Default 20 s (tsx compiles the sources on a cold start). */
  readyTimeoutMs?: number;
}

/** A running worker process. */
export interface WorkerProcess {
  /** Pid of the node process running the worker (not of a wrapper such as faketime). */
  readonly pid: number;
  /** The worker's id, as recorded in the leases it takes. */
  readonly workerId: string;
  readonly ledgerPath: string;
  /** Resolves when the spawned process (the wrapper, if any) has exited. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Send `signal` to the node process, by pid. */
  signal(signal: NodeJS.Signals): void;
  /** SIGKILL, then wait for the exit. */
  kill(): Promise<void>;
  /** SIGTERM (graceful close) and wait for the exit code; SIGKILL after `timeoutMs`. */
  stop(timeoutMs?: number): Promise<number | null>;
  /** Every complete ledger line written so far. */
  ledger(): LedgerEntry[];
  /** What the process wrote to stdout and stderr, for failure messages. */
  output(): string;
}

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SCRIPT = fileURLToPath(new URL('./worker-process.ts', import.meta.url));

/** Every child ever spawned by this module that may still run; killed when this process exits. */
const live = new Map<ChildProcess, () => number | undefined>();
process.once('exit', () => {
  for (const [child, nodePid] of live) killQuietly(child, nodePid());
});

/**
 * SIGKILL a spawned process's whole process group (it leads one: spawned detached), which also
 * reaches node under a wrapper that forks (faketime does), and the node pid itself for good measure.
 */
function killQuietly(child: ChildProcess, nodePid: number | undefined): void {
  for (const target of [child.pid === undefined ? undefined : -child.pid, nodePid]) {
    if (target === undefined) continue;
    try {
      process.kill(target, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
}

/** Parse a ledger file: one JSON object per complete line (a trailing partial line is ignored). */
export function readLedger(path: string): LedgerEntry[] {
  return readJsonLines<LedgerEntry>(path);
}

/** The entries of one phase. */
export function phase<P extends LedgerEntry['phase']>(
  entries: readonly LedgerEntry[],
  p: P,
): Array<LedgerOf<P>> {
  return entries.filter((e): e is LedgerOf<P> => e.phase === p);
}

/** Start one worker process and resolve once it prints `ready`. Prefer useWorkerProcesses(). */
export async function spawnWorker(options: SpawnWorkerOptions, ledgerPath: string): Promise<WorkerProcess> {
  const config: ChildConfig = {
    url: options.url,
    queue: options.queue,
    ledger: ledgerPath,
    concurrency: options.concurrency ?? 1,
    leaseMs: options.leaseMs ?? 15_000,
    sleepMs: options.sleepMs ?? 0,
    ...(options.workerId !== undefined && { workerId: options.workerId }),
    ...(options.maxSleepMs !== undefined && { maxSleepMs: options.maxSleepMs }),
    ...(options.reapIntervalMs !== undefined && { reapIntervalMs: options.reapIntervalMs }),
    ...(options.limit !== undefined && { limit: options.limit }),
    ...(options.groups !== undefined && { groups: options.groups }),
    ...(options.partitions !== undefined && { partitions: options.partitions }),
  };
  const nodeArgs = ['--import', 'tsx', SCRIPT, JSON.stringify(config)];
  const [command, ...args] = [...(options.wrapper ?? []), process.execPath, ...nodeArgs] as [
    string,
    ...string[],
  ];
  const child = spawn(command, args, {
    cwd: ROOT,
    env: { ...process.env, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
    // Its own process group, so a kill reaches node under a wrapper even before node reported its pid.
    detached: true,
  });
  // Known once the child reports it; until then signals go to the spawned process only.
  const known: { nodePid?: number } = {};
  live.set(child, () => known.nodePid);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => {
      live.delete(child);
      resolve({ code, signal });
    });
  });
  const output = captureOutput(child);
  const ready = await awaitReady(child, exited, output, {
    what: 'worker process',
    timeoutMs: options.readyTimeoutMs ?? 20_000,
  }).catch((err: unknown) => {
    killQuietly(child, known.nodePid);
    throw err;
  });
  known.nodePid = ready.pid;

  const handle: WorkerProcess = {
    pid: ready.pid,
    workerId: ready.workerId,
    ledgerPath,
    exited,
    signal(signal) {
      process.kill(ready.pid, signal);
    },
    async kill() {
      if (live.has(child)) killQuietly(child, ready.pid);
      await exited;
    },
    async stop(timeoutMs = 10_000) {
      if (!live.has(child)) return (await exited).code;
      process.kill(ready.pid, 'SIGTERM');
      const timer = setTimeout(() => killQuietly(child, ready.pid), timeoutMs);
      const { code } = await exited;
      clearTimeout(timer);
      return code;
    },
    ledger: () => readLedger(ledgerPath),
    output,
  };
  return handle;
}

/**
 * Spawn worker processes in a test; after each test every one still running is killed (SIGKILL,
 * also when stopped) and waited for, and the ledgers are removed.
 */
export function useWorkerProcesses(): { spawn(options: SpawnWorkerOptions): Promise<WorkerProcess> } {
  let dir: string | undefined;
  let count = 0;
  const spawned: Array<Promise<WorkerProcess | undefined>> = [];
  afterEach(async () => {
    const handles = await Promise.all(spawned.splice(0));
    await Promise.all(handles.filter((h) => h !== undefined).map((h) => h.kill()));
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    dir = undefined;
  });
  return {
    spawn(options) {
      dir ??= mkdtempSync(join(tmpdir(), 'delayq-workers-'));
      const started = spawnWorker(options, join(dir, `worker-${++count}.ledger`));
      spawned.push(started.catch(() => undefined));
      return started;
    },
  };
}
