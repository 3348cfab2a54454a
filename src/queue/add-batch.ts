/**
 * One add script call of a batch of jobs, with WAIT when a job asks for durability, and the check
 * that every such job got the replicas it asked for.
 */
import { DurabilityError } from '../errors.js';
import type { ResolvedAddOptions } from '../job-options.js';
import { add, addReplicated, type AddInput, type AddOutput } from '../operations/add.js';
import type { Layout } from '../operations/wheel.js';
import type { Producer } from '../definition/producer.js';
import type { QueueKeys } from '../redis/keys.js';
import type { ServerTimeBound } from '../server-time-bound.js';
import type { AddResult } from './add-result.js';

/** One job's add output, with what WAIT said when it asked for durability. */
export type Written = AddOutput & { replicated?: number; waitError?: Error | null };

/**
 * One add script call (`call`: its jobs and their packAddJobs value); when a job of the batch asks
 * for durability, WAIT for the most any asks.
 */
export async function addBatch<T>(
  producer: Producer<T>,
  keys: QueueKeys,
  { batch, packed }: { batch: AddInput[]; packed: Buffer | undefined },
  settled: {
    eventsCap: number;
    layout: Layout;
    calledAt: number;
    groupConcurrency: number;
    serverTime: ServerTimeBound;
  },
  durability: ReadonlyArray<ResolvedAddOptions['durability']>,
): Promise<Written[]> {
  const client = producer.context.client;
  const asked = durability.filter((d) => d !== undefined);
  if (asked.length === 0)
    return add(
      client,
      keys,
      batch,
      settled.eventsCap,
      settled.layout,
      settled.calledAt,
      settled.groupConcurrency,
      settled.serverTime,
      packed,
    );
  const wait = {
    replicas: Math.max(...asked.map((d) => d.replicas)),
    timeoutMs: Math.max(...asked.map((d) => d.timeoutMs)),
  };
  const { outputs, replicated, waitError } = await addReplicated(
    client,
    keys,
    batch,
    settled.eventsCap,
    wait,
    settled.layout,
    settled.calledAt,
    settled.groupConcurrency,
    settled.serverTime,
    packed,
  );
  return outputs.map((out) => ({ ...out, replicated, waitError }));
}

/**
 * Fill in `replicated` for the jobs that asked for durability, and throw DurabilityError (with every
 * result) when any of them got fewer replicas than it asked for: nothing is accepted silently.
 */
export function checkDurability(
  results: AddResult[],
  written: ReadonlyArray<{ replicated?: number; waitError?: Error | null }>,
  durability: ReadonlyArray<ResolvedAddOptions['durability']>,
): AddResult[] {
  let short: { requested: number; replicated: number; timeoutMs: number; cause: Error | null } | undefined;
  results.forEach((result, i) => {
    const asked = durability[i];
    const replicated = written[i]?.replicated;
    if (asked === undefined || replicated === undefined) return;
    result.replicated = replicated;
    if (replicated < asked.replicas && (short === undefined || replicated < short.replicated)) {
      short = {
        requested: asked.replicas,
        replicated,
        timeoutMs: asked.timeoutMs,
        cause: written[i]?.waitError ?? null,
      };
    }
  });
  if (short) {
    throw new DurabilityError(
      short.requested,
      short.replicated,
      short.timeoutMs,
      results,
      short.cause ? { cause: short.cause } : undefined,
    );
  }
  return results;
}
