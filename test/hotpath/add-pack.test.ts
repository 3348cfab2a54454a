/**
 * add.lua's two argument forms (docs/PROTOCOL.md, "Adding a job"): the packed one delayq sends and
 * the per-job one producers in other languages send write the same jobs the same way and answer
 * alike (the packed reply has the codes in one string), and a packed value that does not hold
 * what N announces is refused before anything is written.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packAddJobs, recordBuffer } from '../../src/operations/add-pack.js';
import { addKeys, type AddInput } from '../../src/operations/add.js';
import type { QueueKeys } from '../../src/redis/keys.js';
import { runScript, script, type Reply } from '../../src/redis/scripts.js';
import { ScriptBadArg } from '../../src/redis/script-errors.js';
import { EVENTS_FAILURES, freshKeys, job, startFixture, stopFixture, type Fixture } from './support.js';

let f: Fixture;
beforeAll(async () => {
  f = await startFixture();
});
afterAll(async () => {
  await stopFixture(f);
});

/** Due times far from now, so where each job goes does not depend on when the test runs. */
const LATER = 4_000_000_000_000;
const PAST = 1_000_000_000_000;
const MODE = { keep: 'k', replace: 'r', new: 'n' } as const;

function perJob(keys: QueueKeys, jobs: AddInput[]): Promise<Reply> {
  return runScript(f.client, script('add'), addKeys(keys), [
    jobs.length,
    0,
    EVENTS_FAILURES,
    0,
    ...jobs.flatMap((j) => [
      j.id,
      ('delay' in j.when ? 'd' : 'a') + MODE[j.mode],
      'delay' in j.when ? j.when.delay : j.when.at,
      recordBuffer(j.record),
      j.group !== undefined ? `g${j.group}` : j.priority === 0 ? '' : `p${j.priority}`,
    ]),
  ]);
}

function packedRaw(keys: QueueKeys, n: string, value: Buffer): Promise<Reply> {
  return runScript(f.client, script('add'), addKeys(keys), [n, 0, EVENTS_FAILURES, 0, value]);
}

function packed(keys: QueueKeys, jobs: AddInput[]): Promise<Reply> {
  return packedRaw(keys, `P${jobs.length}`, packAddJobs(jobs)!);
}

/** Every key of a queue and its whole contents, by role (the last part of the key name). */
async function contents(keys: QueueKeys): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  const prefix = keys.records.slice(0, keys.records.lastIndexOf(':') + 1);
  for (const key of (await f.client.keys(`${prefix}*`)).sort()) {
    const role = key.slice(prefix.length);
    const type = await f.client.type(key);
    if (type === 'hash') out[role] = await f.client.hgetallBuffer(key);
    else if (type === 'zset') out[role] = await f.client.zrangeBuffer(key, 0, -1, 'WITHSCORES');
    else out[role] = type;
  }
  return out;
}

/** A per-job form's reply without the script's TIME that ends it: code, time, code, time, ... */
const codes = (reply: Reply): unknown => (reply as Reply[]).slice(0, -1).map(String);

/** A packed reply (the codes as one string, then the times, then TIME) in the per-job form's order. */
function packedCodes(reply: Reply): unknown {
  const [letters, ...rest] = (reply as Reply[]).map(String);
  const times = rest.slice(0, -1);
  expect(letters).toHaveLength(times.length);
  return times.flatMap((time, i) => [letters![i], time]);
}

function grouped(id: string, group: string, at: number): AddInput {
  return { ...job(id, { at, header: { group, groupDue: 0 } }), group };
}

describe('the packed and the per-job form', () => {
  it('write the same jobs the same way, and answer alike for ids that exist', async () => {
    const first = [
      job('plain', { at: LATER }),
      job('prio', { at: LATER + 1, header: { priority: -5, maxAttempts: 9 } }),
      job('due-prio', { at: PAST, header: { priority: 3 } }),
      grouped('g-later', 'tenant', LATER + 2),
      grouped('g-due', 'tenant', PAST),
      job('ünïcode:ид', { at: LATER + 3, payload: '{"x":"ü"}' }),
      job('generated', { at: LATER + 4, mode: 'new' }),
    ];
    const second = [
      job('plain', { at: LATER + 5, header: { priority: 2 }, payload: '{"v":2}', mode: 'replace' }),
      job('prio', { at: LATER }),
      job('generated', { at: LATER + 4, mode: 'new' }),
      job('generated', { at: LATER + 4, payload: '{"other":1}', mode: 'new' }),
      job('plain', { at: LATER + 6 }),
    ];
    const a = freshKeys('form-per-job');
    const b = freshKeys('form-packed');
    const replies = [codes(await perJob(a, first)), codes(await perJob(a, second))];
    const packedFirst = await packed(b, first);
    const packedSecond = await packed(b, second);
    expect(String((packedSecond as Reply[])[0])).toBe('RkkTk');
    expect([packedCodes(packedFirst), packedCodes(packedSecond)]).toStrictEqual(replies);
    expect(replies[1]).toStrictEqual([
      'R',
      String(LATER + 5),
      'k',
      String(LATER + 1),
      'k',
      String(LATER + 4),
      'T',
      '-1',
      'k',
      String(LATER + 5),
    ]);
    const written = await contents(a);
    expect(Object.keys(written)).toEqual(expect.arrayContaining(['j', 's', 'p', 'r', 'gq', 'n']));
    expect(await contents(b)).toStrictEqual(written);
  });
});

describe('a packed value that does not hold what N announces is refused, nothing written', () => {
  const two = packAddJobs([job('a', { at: LATER }), job('b', { at: LATER })])!;
  const badIdThenB = packAddJobs([job('bad\nid', { at: LATER }), job('b', { at: LATER })])!;
  it.each([
    ['fewer jobs than N', 'P3', two, /job 3 of 3: the packed value ends before job 3/],
    [
      'a record cut short',
      'P2',
      two.subarray(0, two.length - 1),
      /job 2 of 2: the packed value ends inside this job/,
    ],
    [
      'an id length past the end',
      'P1',
      Buffer.from([0x00, 0xff, 0x61]),
      /job 1 of 1: the packed value ends inside this job/,
    ],
    ['bytes after the last job', 'P1', two, /the packed value has \d+ bytes after its 1 jobs/],
    ['an empty value', 'P1', Buffer.alloc(0), /job 1 of 1: the packed value ends before job 1/],
    ['N that is not a number', 'Px', two, /N Px is not a whole number/],
    [
      // The value is read whole before any job is checked (docs/PROTOCOL.md): its end comes first.
      'a record cut short after a job with a bad id',
      'P2',
      badIdThenB.subarray(0, badIdThenB.length - 1),
      /job 2 of 2: the packed value ends inside this job/,
    ],
  ])('%s', async (_what, n, value, reason) => {
    const keys = freshKeys('packed-bad');
    const error = await packedRaw(keys, n, value).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ScriptBadArg);
    expect((error as Error).message).toMatch(reason);
    expect(await f.client.exists(keys.records, keys.waiting, keys.counters)).toBe(0);
  });

  it('checks a packed job as the per-job form does: a due time in 1970, by name', async () => {
    const keys = freshKeys('packed-1970');
    const error = await packed(keys, [job('a', { at: LATER }), job('b', { at: 1_767_225_600 })]).catch(
      (e: unknown) => e,
    );
    expect((error as Error).message).toMatch(/job 2 of 2: due time 1767225600 is before 2000-01-01/);
    expect(await f.client.exists(keys.records, keys.waiting, keys.counters)).toBe(0);
  });
});
