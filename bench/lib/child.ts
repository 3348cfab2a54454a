/**
 * Parent side of worker-process.ts: spawn a worker process, wait for its messages, close or kill it
 * by pid. Every process spawned here is SIGKILLed when the bench exits, whatever happened.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { ChildConfig, ChildMessage } from './protocol.js';

const entry = fileURLToPath(new URL('../processes/worker-process.ts', import.meta.url));
const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

/** Systems whose worker processes run under --cpu-prof, and where the profiles go (set by the runner). */
export const profiling: { systems: Set<string>; dir: string } = { systems: new Set(), dir: '' };

/** Start-ups run one at a time: tsx compiling in several processes at once starves a 2-core machine. */
let startQueue: Promise<unknown> = Promise.resolve();

type Waiter = { type: ChildMessage['type']; resolve: (m: ChildMessage) => void; reject: (e: Error) => void };

/** A running worker process. */
export class ChildWorker {
  private readonly inbox: ChildMessage[] = [];
  private readonly waiters: Waiter[] = [];
  private readonly exited: Promise<void>;
  /** Called for every message as it arrives (before waiters see it). */
  onMessage: ((message: ChildMessage) => void) | undefined;

  private constructor(readonly process: ChildProcess) {
    this.exited = new Promise((resolve) => process.once('exit', () => resolve()));
    process.on('message', (raw) => {
      const message = raw as ChildMessage;
      this.onMessage?.(message);
      const at = this.waiters.findIndex((w) => w.type === message.type);
      if (at >= 0) this.waiters.splice(at, 1)[0]!.resolve(message);
      else this.inbox.push(message);
    });
    process.once('exit', (code, signal) => {
      for (const w of this.waiters.splice(0)) {
        w.reject(new Error(`worker process exited (${signal ?? code}) before '${w.type}'`));
      }
    });
  }

  /** Spawn a worker process and resolve once its worker is ready. */
  static start(config: ChildConfig, readyTimeoutMs = 120_000): Promise<ChildWorker> {
    const started = startQueue.then(() => ChildWorker.startNow(config, readyTimeoutMs));
    startQueue = started.catch(() => {});
    return started;
  }

  private static async startNow(config: ChildConfig, readyTimeoutMs: number): Promise<ChildWorker> {
    const flags = profiling.systems.has(config.system) ? ['--cpu-prof', '--cpu-prof-dir', profiling.dir] : [];
    const child = spawn(process.execPath, [...flags, '--import', 'tsx', entry, JSON.stringify(config)], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    live.add(child);
    child.once('exit', () => live.delete(child));
    const worker = new ChildWorker(child);
    await worker.next('ready', readyTimeoutMs);
    return worker;
  }

  get pid(): number {
    return this.process.pid ?? -1;
  }

  /** The next message of `type` (one that already arrived, or the next to come), or reject after `timeoutMs`. */
  next<T extends ChildMessage['type']>(
    type: T,
    timeoutMs: number,
  ): Promise<Extract<ChildMessage, { type: T }>> {
    const at = this.inbox.findIndex((m) => m.type === type);
    if (at >= 0) return Promise.resolve(this.inbox.splice(at, 1)[0] as Extract<ChildMessage, { type: T }>);
    if (this.process.exitCode !== null || this.process.signalCode !== null) {
      return Promise.reject(new Error(`worker process already exited, no '${type}'`));
    }
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        type,
        resolve: (m) => {
          clearTimeout(timer);
          resolve(m as Extract<ChildMessage, { type: T }>);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      };
      const timer = setTimeout(() => {
        this.waiters.splice(this.waiters.indexOf(waiter), 1);
        reject(new Error(`no '${type}' from worker process ${this.pid} within ${timeoutMs} ms`));
      }, timeoutMs);
      this.waiters.push(waiter);
    });
  }

  /** Send a signal to this process (by its pid). */
  kill(signal: NodeJS.Signals): void {
    this.process.kill(signal);
  }

  /** Resolves when the process has exited. */
  waitExit(): Promise<void> {
    return this.exited;
  }

  /** Ask the worker to close; SIGKILL it if it has not exited within `timeoutMs`. */
  async close(timeoutMs = 10_000): Promise<void> {
    if (this.process.exitCode !== null || this.process.signalCode !== null) return;
    if (this.process.connected) this.process.send({ type: 'close' });
    const timer = setTimeout(() => this.kill('SIGKILL'), timeoutMs);
    await this.exited;
    clearTimeout(timer);
  }
}

/** A worker process at `concurrency` with default settings that reports once `expect` jobs completed. */
export function startCountingWorker(
  config: Pick<ChildConfig, 'system' | 'url' | 'queue' | 'concurrency'> & {
    expect: number;
  },
): Promise<ChildWorker> {
  return ChildWorker.start({ ...config, settings: 'default', mode: 'count' });
}
