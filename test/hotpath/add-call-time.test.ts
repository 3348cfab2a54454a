/**
 * add.lua's call time (docs/DESIGN.md invariant 7, issue 14): a delay counts from the add() call, taken as
 * the script's TIME less `elapsed`, or as the producer's bound of the server clock at the call
 * (`elapsed:bound`) when that is earlier and no more than 10 s earlier. The reply ends with the
 * script's TIME in µs, which producers learn the bound from. Against a real redis-server.
 */
import { performance } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { add, addKeys } from '../../src/operations/add.js';
import { ZSET_LAYOUT } from '../../src/operations/wheel.js';
import type { QueueKeys } from '../../src/redis/keys.js';
import { runScript, script } from '../../src/redis/scripts.js';
import { ScriptBadArg } from '../../src/redis/script-errors.js';
import { ServerTimeBound } from '../../src/server-time-bound.js';
import { EVENTS_FAILURES, freshKeys, job, startFixture, stopFixture, type Fixture } from './support.js';

let f: Fixture;
beforeAll(async () => {
  f = await startFixture();
});
afterAll(async () => {
  await stopFixture(f);
});

async function serverNowUs(): Promise<number> {
  const [s, us] = await f.client.time();
  return Number(s) * 1_000_000 + Number(us);
}

/**
 * A bound that puts the server's clock `shiftMs` from its real reading (negative: behind). The
 * bound is later than that reading by up to the TIME call's round trip (`rttMs`), the time from
 * its send to the script: a test comparing with a later reading allows for it.
 */
let rttMs = 0;
async function boundShiftedBy(shiftMs: number): Promise<ServerTimeBound> {
  const bound = new ServerTimeBound();
  const sentAt = performance.now();
  const now = await serverNowUs();
  const arrived = performance.now();
  rttMs = arrived - sentAt;
  bound.observe(sentAt, now + shiftMs * 1000, arrived);
  return bound;
}

const DELAY = 60_000;

async function addOne(
  bound: ServerTimeBound | undefined,
): Promise<{ due: number; before: number; after: number }> {
  const keys = freshKeys('call-time');
  const before = Math.floor((await serverNowUs()) / 1000);
  const [out] = await add(
    f.client,
    keys,
    [job('a', { delay: DELAY })],
    EVENTS_FAILURES,
    ZSET_LAYOUT,
    performance.now(),
    0,
    bound,
  );
  const after = Math.floor((await serverNowUs()) / 1000);
  const stored = Number(await f.client.zscore(keys.waiting, 'a'));
  expect(stored).toBe(out!.runAt);
  return { due: out!.runAt, before, after };
}

/** add.lua called directly: one job 'a' delayed DELAY ms, with `elapsed` as given. */
function rawAdd(keys: QueueKeys, elapsed: string | number): Promise<unknown> {
  return runScript(f.client, script('add'), addKeys(keys), [
    1,
    elapsed,
    EVENTS_FAILURES,
    0,
    'a',
    'dk',
    DELAY,
    job('a').record,
    '',
  ]);
}

describe('add.lua counts a delay from the call', () => {
  it('ends its reply with its TIME in µs', async () => {
    const keys = freshKeys('call-time-reply');
    const before = await serverNowUs();
    const reply = (await rawAdd(keys, 0)) as unknown[];
    const after = await serverNowUs();
    expect(reply).toHaveLength(3);
    expect(Number(reply[2])).toBeGreaterThanOrEqual(before);
    expect(Number(reply[2])).toBeLessThanOrEqual(after);
  });

  it('without a bound: from its TIME less elapsed', async () => {
    const { due, before, after } = await addOne(undefined);
    expect(due).toBeGreaterThanOrEqual(before + DELAY);
    expect(due).toBeLessThanOrEqual(after + DELAY);
  });

  it('with a bound earlier than its TIME: from the bound', async () => {
    // The producer's bound says the call was at most 5 s before the server's now.
    const { due, before } = await addOne(await boundShiftedBy(-5_000));
    expect(due).toBeLessThanOrEqual(before - 5_000 + DELAY + 5 + Math.ceil(rttMs));
    expect(due).toBeGreaterThanOrEqual(before - 5_000 + DELAY - 5);
  });

  it('a bound later than its TIME is not used (it only ever makes a job sooner)', async () => {
    const { due, before, after } = await addOne(await boundShiftedBy(5_000));
    expect(due).toBeGreaterThanOrEqual(before + DELAY);
    expect(due).toBeLessThanOrEqual(after + DELAY);
  });

  it('a bound more than 10 s before its TIME is a clock gone wrong: not used', async () => {
    const { due, before, after } = await addOne(await boundShiftedBy(-20_000));
    expect(due).toBeGreaterThanOrEqual(before + DELAY);
    expect(due).toBeLessThanOrEqual(after + DELAY);
  });

  it.each([
    ['5:', /elapsed 5: is not whole ms/],
    ['5:abc', /elapsed 5:abc is not whole ms/],
    [':1764547200000', /is not whole ms/],
    ['5:12', /the call time after the colon is not an epoch ms/],
    ['5:1234567890123456', /the call time after the colon is not an epoch ms/],
  ])('elapsed %s is refused, nothing written', async (elapsed, message) => {
    const keys = freshKeys('call-time-bad');
    const error = await rawAdd(keys, elapsed).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ScriptBadArg);
    expect((error as Error).message).toMatch(message);
    expect(await f.client.exists(keys.records, keys.waiting)).toBe(0);
  });
});
