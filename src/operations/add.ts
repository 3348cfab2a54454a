/** The `add` operation: accept jobs into the schedule (add.lua). */
import type { QueueKeys } from '../redis/keys.js';
import type { RedisClient } from '../redis/connection.js';
import { runScript, runScriptAndWait, script, type Reply, type ReplicaWait } from '../redis/scripts.js';
import type { JobMeta } from './meta.js';
import { asArray, num } from './reply.js';

/** When a job is due: `delay` ms after the server's now, or at an absolute epoch ms. */
export type When = { delay: number } | { at: number };

/** One job ready to be written. */
export interface AddInput {
  id: string;
  when: When;
  envelope: Buffer;
  meta: Pick<JobMeta, 'm' | 'b' | 'o'>;
}

/** Per job: whether it was written, and its due time (the existing job's when it was not). */
export interface AddOutput {
  created: boolean;
  runAt: number;
}

/** Write `jobs` in one atomic script call. */
export async function add(
  client: RedisClient,
  keys: QueueKeys,
  jobs: readonly AddInput[],
  eventsCap: number,
): Promise<AddOutput[]> {
  return parseAddReply(await runScript(client, script('add'), addKeys(keys), addArgs(jobs, eventsCap)), jobs);
}

/**
 * Write `jobs` like add, then wait (WAIT, on the same connection) until `wait.replicas` replicas
 * hold them or `wait.timeoutMs` passes; resolves with how many did. Deciding whether that is enough
 * is the caller's.
 */
export async function addReplicated(
  client: RedisClient,
  keys: QueueKeys,
  jobs: readonly AddInput[],
  eventsCap: number,
  wait: ReplicaWait,
): Promise<{ outputs: AddOutput[]; replicated: number; waitError: Error | null }> {
  const { reply, replicated, waitError } = await runScriptAndWait(
    client,
    script('add'),
    addKeys(keys),
    addArgs(jobs, eventsCap),
    wait,
  );
  return { outputs: parseAddReply(reply, jobs), replicated, waitError };
}

function addKeys(keys: QueueKeys): string[] {
  return [keys.schedule, keys.jobs, keys.meta, keys.wake, keys.events];
}

function addArgs(jobs: readonly AddInput[], eventsCap: number): Array<string | number | Buffer> {
  const args: Array<string | number | Buffer> = [jobs.length];
  for (const job of jobs) {
    const [kind, value] = 'delay' in job.when ? ['d', job.when.delay] : ['a', job.when.at];
    args.push(job.id, kind, value, job.envelope, JSON.stringify({ a: 0, ...job.meta }));
  }
  args.push(eventsCap);
  return args;
}

function parseAddReply(raw: Reply, jobs: readonly AddInput[]): AddOutput[] {
  const reply = asArray(raw, 'add');
  return jobs.map((_, i) => ({
    created: num(reply, 2 * i, 'add') === 1,
    runAt: num(reply, 2 * i + 1, 'add'),
  }));
}
