/**
 * Shared set-up of the hot-path tests: a real redis-server, a queue's keys, and the add and claim
 * operations with the defaults a worker would pass.
 */
import { Redis } from 'ioredis';
import { add, type AddInput, type AddMode } from '../../src/operations/add.js';
import { claim, type AckItem, type ClaimInput, type ClaimOutput } from '../../src/operations/claim.js';
import { ZSET_LAYOUT } from '../../src/operations/wheel.js';
import { encodeRecord, NEW_JOB_HEADER, type RecordHeader } from '../../src/record/index.js';
import { queueKeys, type QueueKeys } from '../../src/redis/keys.js';
import { startRedis, type RedisServer } from '../support/redis-server.js';

/** A server and a client for one test file. */
export interface Fixture {
  server: RedisServer;
  client: Redis;
}

export async function startFixture(): Promise<Fixture> {
  const server = await startRedis();
  return { server, client: new Redis(server.url) };
}

export async function stopFixture(f: Fixture): Promise<void> {
  f.client.disconnect();
  await f.server.stop();
}

let queues = 0;
/** A fresh queue's keys. */
export function freshKeys(label: string): QueueKeys {
  queues += 1;
  return queueKeys(`${label}-${queues}`);
}

/** One job to add: payload text, header fields, mode (its record in one Buffer). */
export function job(
  id: string,
  opts: {
    delay?: number;
    at?: number;
    header?: Partial<RecordHeader>;
    payload?: string;
    mode?: AddMode;
  } = {},
): AddInput & { record: Buffer } {
  const header = { ...NEW_JOB_HEADER, ...opts.header };
  return {
    id,
    when: opts.at !== undefined ? { at: opts.at } : { delay: opts.delay ?? 0 },
    record: encodeRecord(header, Buffer.from(opts.payload ?? `{"n":"${id}"}`)),
    priority: header.priority,
    mode: opts.mode ?? 'keep',
  };
}

/** Failures only, as a queue's default events option. */
export const EVENTS_FAILURES = -10_000;

export function addJobs(f: Fixture, keys: QueueKeys, jobs: AddInput[], eventsCap = EVENTS_FAILURES) {
  return add(f.client, keys, jobs, eventsCap, ZSET_LAYOUT);
}

export function claimJobs(
  f: Fixture,
  keys: QueueKeys,
  limit: number,
  opts: Partial<ClaimInput> & { acks?: AckItem[] } = {},
): Promise<ClaimOutput> {
  return claim(f.client, keys, {
    strategy: 'range',
    limit,
    leaseMs: 30_000,
    holder: 1,
    deadMaxCount: 1000,
    deadMaxAgeMs: 0,
    rate: { max: 0, perMs: 0 },
    eventsCap: EVENTS_FAILURES,
    zmscore: true,
    layout: ZSET_LAYOUT,
    ...opts,
  });
}

/** An ack of a claimed job, as a worker sends it. */
export function ackOf(
  job: { member: string; deadline: number; header: RecordHeader },
  extra: Partial<AckItem> = {},
): AckItem {
  return {
    member: job.member,
    knownDeadline: job.deadline,
    hadError: job.header.hasError,
    progressed: false,
    ...extra,
  };
}
