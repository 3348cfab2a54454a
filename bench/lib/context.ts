/** What every workload gets: the Redis, the sizes to run, the systems, and where figures go. */
import { randomBytes } from 'node:crypto';
import type { SystemName } from '../adapters/adapter.js';
import type { BenchRedis } from './redis.js';
import type { Recorder } from './recorder.js';
import type { Profile } from './profile.js';

/** Shared state of one bench run. */
export interface Context {
  redis: BenchRedis;
  profile: Profile;
  systems: readonly SystemName[];
  rec: Recorder;
  log(line: string): void;
}

/** A queue name no earlier run used. */
export function freshQueue(tag: string): string {
  return `bench-${tag}-${randomBytes(3).toString('hex')}`;
}

/** Split `items` into chunks of `size`. */
export function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/** Resolve after `ms`. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
