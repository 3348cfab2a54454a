/**
 * The one interface every benchmarked queue sits behind. Workloads use only this, so a figure for
 * one system and the same figure for another come from the same code path.
 */

/** The systems compared. */
export type SystemName = 'delayq' | 'bullmq' | 'bee-queue';

/** Every system, in the order runs take turns. */
export const SYSTEMS: readonly SystemName[] = ['delayq', 'bullmq', 'bee-queue'];

/** What every benchmark job carries. */
export interface BenchPayload {
  /** Sequence number within the run. */
  i: number;
  /** Intended start, epoch ms: Date.now() at add + delay. */
  due: number;
  /** Filler to reach a payload size (W5). */
  pad?: string;
  /** Run but not measured: warms the producer's connection before a timed phase (W8). */
  warmup?: boolean;
}

/** One job to add. */
export interface NewJob {
  payload: BenchPayload;
  /** 0 for an immediate job. */
  delayMs: number;
}

/** What a handler learns about the job it runs. */
export interface StartedJob {
  payload: BenchPayload;
  /** Lateness by the Redis clock (claim time minus due time), when the system records both; else null. */
  serverLatenessMs: number | null;
}

/**
 * 'default': each system's out-of-the-box lease / lock / stall settings.
 * 'short': 1 s leases and 1 s stall checks, so crash recovery is quick (quick mode, W6 "configured").
 */
export type Settings = 'default' | 'short';

/** How to run a worker. */
export interface WorkerSpec {
  concurrency: number;
  settings: Settings;
  handler(job: StartedJob): Promise<void>;
  /** Called once the system has recorded a job as done (after its ack / completion round trip). */
  onCompleted(): void;
}

/** A worker that runs until closed. */
export interface RunningWorker {
  close(): Promise<void>;
}

/** Where a system connects and which queue it uses. */
export interface AdapterOptions {
  url: string;
  queue: string;
}

/** One system: producer calls plus a way to start a worker on the same queue. */
export interface Adapter {
  readonly system: SystemName;
  add(job: NewJob): Promise<void>;
  addBulk(jobs: readonly NewJob[]): Promise<void>;
  /** Resolves once the worker is connected and taking jobs. */
  startWorker(spec: WorkerSpec): Promise<RunningWorker>;
  /** Close the producer side (workers are closed through their own handle). */
  close(): Promise<void>;
}

/** Host and port of a redis:// URL, for clients that want them apart. */
export function hostPort(url: string): { host: string; port: number } {
  const parsed = new URL(url);
  return { host: parsed.hostname, port: Number(parsed.port || 6379) };
}

/** The short settings, in one place so every system gets the same numbers. */
export const SHORT_LEASE_MS = 1_000;
