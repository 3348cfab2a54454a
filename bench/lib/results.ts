/**
 * What a benchmark run records (bench/results/*.json): read by the report (report.ts) and the goals
 * table (goals.ts), written by bench/run.ts. Its own module so those two import it rather than
 * each other.
 */
import type { SystemName } from '../adapters/adapter.js';
import type { Environment } from './machine.js';
import type { Profile } from './profile.js';
import type { Figure } from './recorder.js';

/** Everything a run wrote to its JSON file. */
export interface RunResults {
  date: string;
  command: string;
  profile: Profile;
  environment: Environment;
  systems: SystemName[];
  workloads: string[];
  secondsByWorkload: Record<string, number>;
  /** 1-minute load average at the start, before each workload, and at the end. */
  loadAverage: Record<string, number>;
  /** 1-, 5- and 15-minute load averages at the start and the end (absent in older results). */
  loadAverages?: { start: number[]; end: number[] };
  totalSeconds: number;
  /** Workloads that failed, with the error. */
  errors: Record<string, string>;
  figures: Figure[];
  ceilings: Array<{ name: string; opsPerSec: number }>;
  distributions: Record<string, Partial<Record<SystemName, number[]>>>;
  details: Record<string, unknown>;
}
