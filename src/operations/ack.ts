/** The `ack` operation: jobs finished (ack.lua), one call for a batch. */
import type { QueueKeys } from '../redis/keys.js';
import type { RedisClient } from '../redis/connection.js';
import { runScript, script } from '../redis/scripts.js';
import { ScriptLeaseLost } from '../redis/script-errors.js';
import { asArray, str } from './reply.js';

/** Completed-job retention: keep up to `count` finished jobs, none older than `ageMs` (0: no age limit). */
export interface Retention {
  count: number;
  ageMs: number;
}

/** One job to ack. */
export interface AckJob {
  id: string;
  token: string;
  /** The lease deadline this worker was last told, so a resent ack can be recognised. */
  knownDeadline: number;
}

/** What an ack needs. */
export interface AckInput extends AckJob {
  keepCompleted: Retention;
  /** How many ids of completed jobs to remember, and for how long, so a resent add cannot run one again. */
  rememberCompleted: Retention;
  eventsCap: number;
}

/** Per job: applied, already applied (a resent ack), or refused because the lease was lost. */
export type AckOutcome = { status: 'ok' } | { status: 'already' } | { status: 'lost'; detail: string };

/** How many ARGV come before the per-job triples (id, token, known deadline) of ack.lua. */
export const ACK_ARGS_BEFORE_JOBS = 5;

/** Ack `jobs` in one atomic call; the outcomes are in the same order. */
export async function ackMany(
  client: RedisClient,
  keys: QueueKeys,
  input: {
    jobs: readonly AckJob[];
    keepCompleted: Retention;
    rememberCompleted: Retention;
    eventsCap: number;
  },
): Promise<AckOutcome[]> {
  const args: Array<string | number> = [
    input.keepCompleted.count,
    input.keepCompleted.ageMs,
    input.eventsCap,
    input.rememberCompleted.count,
    input.rememberCompleted.ageMs,
  ];
  for (const job of input.jobs) args.push(job.id, job.token, job.knownDeadline);
  const reply = asArray(
    await runScript(
      client,
      script('ack'),
      [
        keys.jobs,
        keys.meta,
        keys.active,
        keys.leases,
        keys.errors,
        keys.completed,
        keys.events,
        keys.done,
        keys.progress,
      ],
      args,
    ),
    'ack',
  );
  return input.jobs.map((_, i): AckOutcome => {
    const status = str(reply, i, 'ack');
    if (status === 'OK') return { status: 'ok' };
    if (status === 'ALREADY') return { status: 'already' };
    return { status: 'lost', detail: status.replace(/^LOST /, '') };
  });
}

/** Ack one job: 'ok', or 'already' for a resent ack. Throws ScriptLeaseLost when refused. */
export async function ack(client: RedisClient, keys: QueueKeys, input: AckInput): Promise<'ok' | 'already'> {
  const [outcome] = await ackMany(client, keys, {
    jobs: [{ id: input.id, token: input.token, knownDeadline: input.knownDeadline }],
    keepCompleted: input.keepCompleted,
    rememberCompleted: input.rememberCompleted,
    eventsCap: input.eventsCap,
  });
  if (!outcome || outcome.status === 'lost') throw new ScriptLeaseLost(outcome?.detail ?? 'no reply');
  return outcome.status;
}
