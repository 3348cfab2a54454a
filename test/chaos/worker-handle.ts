/**
 * Parent side of chaos-worker.ts: spawn a worker process, wait for `ready`, signal it by pid.
 * Adapted from test/support/processes.ts (which spawns worker-process.ts). Every process spawned
 * here is tracked and SIGKILLed by killAllChaosWorkers() and, as a last resort, when this process
 * exits.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { ChaosWorkerConfig } from './chaos-worker.js';
import { awaitReady, captureOutput } from '../support/ready-line.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SCRIPT = fileURLToPath(new URL('./chaos-worker.ts', import.meta.url));

/** A running chaos worker process. */
export interface ChaosWorker {
  readonly pid: number;
  readonly workerId: string;
  readonly config: ChaosWorkerConfig;
  /** Resolves when the process has exited. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Whether the process still runs (not yet seen to exit). */
  alive(): boolean;
  signal(signal: NodeJS.Signals): void;
  /** SIGKILL (also when stopped), then wait for the exit. */
  kill(): Promise<void>;
  /** SIGCONT, SIGTERM (graceful close), wait for the exit code; SIGKILL after `timeoutMs`. */
  stop(timeoutMs?: number): Promise<number | null>;
  /** What the process wrote to stdout and stderr, for failure messages. */
  output(): string;
}

const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of live) killGroup(child);
});

function killGroup(child: ChildProcess): void {
  if (child.pid === undefined) return;
  try {
    // Its own process group (spawned detached): the kill reaches anything it started too.
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    // Already gone.
  }
}

/** SIGKILL every chaos worker still running and wait until each has exited. */
export async function killAllChaosWorkers(): Promise<void> {
  const children = [...live];
  await Promise.all(
    children.map(
      (child) =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) return resolve();
          child.once('exit', () => resolve());
          killGroup(child);
        }),
    ),
  );
}

/** Start one chaos worker and resolve once it prints `ready`. */
export async function spawnChaosWorker(
  config: ChaosWorkerConfig,
  { readyTimeoutMs = 30_000, env = {} }: { readyTimeoutMs?: number; env?: Record<string, string> } = {},
): Promise<ChaosWorker> {
  const child = spawn(process.execPath, ['--import', 'tsx', SCRIPT, JSON.stringify(config)], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  live.add(child);
  const output = captureOutput(child);
  let running = true;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => {
      running = false;
      live.delete(child);
      resolve({ code, signal });
    });
  });
  const ready = await awaitReady(child, exited, output, {
    what: 'chaos worker',
    timeoutMs: readyTimeoutMs,
  }).catch((err: unknown) => {
    killGroup(child);
    throw err;
  });

  return {
    pid: ready.pid,
    workerId: ready.workerId,
    config,
    exited,
    alive: () => running,
    signal(signal) {
      if (running) process.kill(ready.pid, signal);
    },
    async kill() {
      if (running) killGroup(child);
      await exited;
    },
    async stop(timeoutMs = 15_000) {
      if (!running) return (await exited).code;
      process.kill(ready.pid, 'SIGCONT');
      process.kill(ready.pid, 'SIGTERM');
      const timer = setTimeout(() => killGroup(child), timeoutMs);
      const { code } = await exited;
      clearTimeout(timer);
      return code;
    },
    output,
  };
}
