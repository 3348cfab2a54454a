/**
 * A producer in another language has no TypeScript in front of it: it calls add.lua with whatever it
 * wrote (docs/PROTOCOL.md). Played here with raw EVAL calls and key names spelled out by hand, every
 * mistake such a producer is likely to make is either refused by the script with DELAYQ_BAD_ARG and
 * nothing written, or accepted and then dead-lettered with a reason that names the problem. None is
 * run with a silently altered value (DESIGN invariant 10).
 */
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Queue, ValidationError, Worker } from '../../src/index.js';
import { expandLua } from '../../src/redis/lua-source.js';
import { inspector, uniqueQueue, useRedis, waitFor } from '../support/fixtures.js';

const redis = useRedis();
// What the npm package ships as dist/scripts/add.lua.
const SCRIPTS = join(import.meta.dirname, '../../src/scripts');
const ADD_LUA = expandLua(SCRIPTS, 'add.lua');
const RESCHEDULE_LUA = expandLua(SCRIPTS, 'reschedule.lua');
const FAIL_LUA = expandLua(SCRIPTS, 'fail.lua');
const RELEASE_LUA = expandLua(SCRIPTS, 'release.lua');
let raw: Redis;
beforeAll(() => {
  raw = inspector(redis.url());
});
afterAll(async () => {
  await raw.quit();
});

function keysOf(q: string): string[] {
  return ['schedule', 'jobs', 'meta', 'wake', 'events', 'done'].map((k) => `dq:{${q}}:${k}`);
}

/** One job through add.lua, as a foreign producer would call it. */
function rawAdd(q: string, job: { id: string; kind: string; value: string; envelope: string; meta: string }) {
  const keys = keysOf(q);
  return raw.eval(
    ADD_LUA,
    keys.length,
    ...keys,
    '1',
    job.id,
    job.kind,
    job.value,
    job.envelope,
    job.meta,
    '100',
  );
}

function envelope(id: string, payloadJson: string, createdAt = '1767225600000'): string {
  return `{"v":1,"id":"${id}","version":1,"createdAt":${createdAt},"payload":${payloadJson}}`;
}

async function keysOfQueue(q: string): Promise<string[]> {
  return (await raw.keys(`dq:{${q}}:*`)).sort();
}

describe('refused by add.lua, nothing written', () => {
  const good = { id: 'j', kind: 'd', value: '0', envelope: envelope('j', '1'), meta: '{"a":0,"m":3}' };
  it.each([
    ['a negative delay', { value: '-5' }, /job 1 of 1: delay -5 is not a whole number of ms >= 0/],
    ['a fractional delay', { value: '1.5' }, /delay 1\.5 is not a whole number/],
    ['a delay in exponent form', { value: '1e3' }, /delay 1e3 is not a whole number/],
    [
      'a due time in 1970 (epoch seconds passed as ms)',
      { kind: 'a', value: '1767225600' },
      /due time 1767225600 is before 2000-01-01.*epoch seconds instead of ms\?/,
    ],
    ['a due time after 9999', { kind: 'a', value: '999999999999999' }, /after 9999-12-31/],
    ['an unknown when-kind', { kind: 'x' }, /when-kind x is not d \(delay ms\) or a \(epoch ms\)/],
    ['max attempts 0', { meta: '{"a":0,"m":0}' }, /meta m \(max attempts\) is not a whole number >= 1/],
    ['fractional max attempts', { meta: '{"a":0,"m":2.5}' }, /meta m/],
    ['attempts already started', { meta: '{"a":1,"m":3}' }, /meta a \(attempts started\) is not 0/],
    ['meta that is not JSON', { meta: '{a:0}' }, /meta is not a JSON object/],
    ['an unknown meta field', { meta: '{"a":0,"m":3,"r":5}' }, /meta has the unknown field r/],
    ['a timeout of 0', { meta: '{"a":0,"m":3,"o":0}' }, /meta o \(timeout ms\)/],
    ['a backoff of an unknown type', { meta: '{"a":0,"m":3,"b":{"type":"linear","delay":1}}' }, /b\.type/],
    ['an empty id', { id: '' }, /id is empty/],
    ['an id with a newline', { id: 'a\nb' }, /id contains a control character/],
    ['an empty envelope', { envelope: '' }, /envelope is empty/],
    ['an unknown mode', { kind: 'dx' }, /mode x of when-kind dx is not k \(keep\) or r \(replace\)/],
    ['a mode after an unknown when-kind', { kind: 'xr' }, /when-kind x is not d/],
    ['replace without its KEYS', { kind: 'dr' }, /mode r \(replace\) needs the KEYS active, dead, completed/],
  ])('%s', async (_what, change, reason) => {
    const q = uniqueQueue('foreign');
    await expect(rawAdd(q, { ...good, ...change })).rejects.toThrow(reason);
    expect(await keysOfQueue(q)).toEqual([]);
  });

  it('refuses a whole batch when one of its jobs is bad, and a wrong argument count', async () => {
    const q = uniqueQueue('foreign');
    const keys = keysOf(q);
    const ok = ['ok', 'd', '0', envelope('ok', '1'), '{"a":0,"m":3}'];
    const bad = ['bad', 'd', '-1', envelope('bad', '1'), '{"a":0,"m":3}'];
    await expect(raw.eval(ADD_LUA, 6, ...keys, '2', ...ok, ...bad, '100')).rejects.toThrow(
      /DELAYQ_BAD_ARG job 2 of 2: delay -1/,
    );
    await expect(raw.eval(ADD_LUA, 6, ...keys, '2', ...ok, '100')).rejects.toThrow(
      /DELAYQ_BAD_ARG ARGV has 7 values; N = 2 jobs need 12/,
    );
    await expect(raw.eval(ADD_LUA, 6, ...keys, '0', '100')).rejects.toThrow(/DELAYQ_BAD_ARG N 0/);
    await expect(raw.eval(ADD_LUA, 6, ...keys, '1', ...ok, 'ten')).rejects.toThrow(
      /DELAYQ_BAD_ARG events cap ten is not a whole number/,
    );
    expect(await keysOfQueue(q)).toEqual([]);
  });

  it('replaces a waiting job when asked by mode r with the replace KEYS; mode k and no mode keep it', async () => {
    const q = uniqueQueue('foreign');
    const replaceKeys = ['active', 'dead', 'completed'].map((k) => `dq:{${q}}:${k}`);
    const call = (kind: string, payload: string, extraKeys: string[] = []) =>
      raw.eval(
        ADD_LUA,
        6 + extraKeys.length,
        ...keysOf(q),
        ...extraKeys,
        '1',
        'j',
        kind,
        '3600000',
        envelope('j', payload),
        '{"a":0,"m":3}',
        '100',
      ) as Promise<number[]>;
    expect((await call('d', '1'))[0]).toBe(1);
    expect((await call('dk', '2', replaceKeys))[0]).toBe(0);
    expect((await call('d', '3', replaceKeys))[0]).toBe(0);
    expect(await raw.hget(`dq:{${q}}:jobs`, 'j')).toBe(envelope('j', '1'));
    const [code, runAt] = await call('dr', '4', replaceKeys);
    expect(code).toBe(3);
    expect(await raw.hget(`dq:{${q}}:jobs`, 'j')).toBe(envelope('j', '4'));
    expect(Number(await raw.zscore(`dq:{${q}}:schedule`, 'j'))).toBe(runAt);
    expect(await raw.zcard(`dq:{${q}}:schedule`)).toBe(1);
  });

  it('checks reschedule.lua the same way', async () => {
    const q = uniqueQueue('foreign');
    await rawAdd(q, { ...good, value: '3600000' });
    const before = await raw.zscore(`dq:{${q}}:schedule`, 'j');
    const keys = ['schedule', 'meta', 'wake', 'events', 'jobs', 'active', 'dead', 'completed'].map(
      (k) => `dq:{${q}}:${k}`,
    );
    await expect(raw.eval(RESCHEDULE_LUA, 8, ...keys, 'j', 'a', '5000', '100')).rejects.toThrow(
      /DELAYQ_BAD_ARG due time 5000 is before 2000-01-01/,
    );
    await expect(raw.eval(RESCHEDULE_LUA, 8, ...keys, 'j', 'd', '-1', '100')).rejects.toThrow(
      /DELAYQ_BAD_ARG delay -1 is not a whole number/,
    );
    expect(await raw.zscore(`dq:{${q}}:schedule`, 'j')).toBe(before);
  });

  it('checks the delays a worker in another language passes to fail.lua and release.lua', async () => {
    const q = uniqueQueue('foreign');
    await rawAdd(q, good);
    const k = (name: string): string => `dq:{${q}}:${name}`;
    const failKeys = ['schedule', 'jobs', 'meta', 'active', 'leases', 'dead', 'errors', 'wake', 'events'].map(
      k,
    );
    const fail = (delay: string) =>
      raw.eval(
        FAIL_LUA,
        9,
        ...failKeys,
        'j',
        '1.1',
        delay,
        '{"name":"Error","message":"x"}',
        '10',
        '0',
        '100',
        'x',
      );
    await expect(fail('-5')).rejects.toThrow(
      /DELAYQ_BAD_ARG retry delay -5 is not -1 or a whole number of ms/,
    );
    await expect(fail('2.5')).rejects.toThrow(/DELAYQ_BAD_ARG retry delay 2\.5/);
    // A valid delay passes the check and meets the lease check: this token holds no lease.
    await expect(fail('100')).rejects.toThrow(/DELAYQ_LEASE_LOST/);
    const releaseKeys = ['schedule', 'meta', 'active', 'leases', 'wake', 'events'].map(k);
    await expect(raw.eval(RELEASE_LUA, 6, ...releaseKeys, 'j', '1.1', '-1', '100')).rejects.toThrow(
      /DELAYQ_BAD_ARG delay -1 is not a whole number of ms >= 0/,
    );
    expect(await raw.zscore(k('schedule'), 'j')).not.toBeNull();
    expect(await raw.hlen(k('errors'))).toBe(0);
  });

  it('reaches a TypeScript caller as a ValidationError naming the script', async () => {
    const queue = new Queue(uniqueQueue('foreign'), { connection: redis.url() });
    try {
      // A delay the TypeScript check lets through (any finite ms) but no due time can hold.
      const error: unknown = await queue.add(1, { delay: 1e17 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as Error).message).toMatch(
        /^add\.lua refused its arguments \(DELAYQ_BAD_ARG\): job 1 of 1: delay 100000000000000000 puts the job after 9999-12-31; nothing was written$/,
      );
      expect(await queue.counts()).toEqual({ scheduled: 0, due: 0, active: 0, dead: 0 });
      await expect(queue.add(1, { runAt: 1767225600 })).rejects.toThrow(
        /runAt must lie between 2000-01-01 and 9999-12-31.*epoch seconds instead of ms\?/,
      );
    } finally {
      await queue.close();
    }
  });
});

describe('accepted by add.lua (it cannot read a codec), then dead-lettered with a named reason', () => {
  it('runs the good job with its values intact and buries each bad one, naming why', async () => {
    const q = uniqueQueue('foreign');
    const jobs: Array<[string, string, string?]> = [
      [
        'good',
        '{"n":9007199254740991,"big":{"~t":"BigInt","v":"9007199254740993"},"at":{"~t":"Date","v":"2026-01-02T03:04:05.006Z"}}',
      ],
      ['raw-big-int', '{"n":9007199254740993}'],
      ['date-offset', '{"~t":"Date","v":"2026-01-02T03:04:05.006+00:00"}'],
      ['date-no-ms', '{"~t":"Date","v":"2026-01-02T03:04:05Z"}'],
      ['float-created', '1', '1767225600000.5'],
    ];
    for (const [id, payload, createdAt] of jobs) {
      const reply = await rawAdd(q, {
        id,
        kind: 'd',
        value: '0',
        envelope: envelope(id, payload, createdAt),
        meta: '{"a":0,"m":3}',
      });
      expect((reply as number[])[0]).toBe(1);
    }
    const seen = new Map<string, unknown>();
    const worker = new Worker(q, async (job) => void seen.set(job.id, job.payload), {
      connection: redis.url(),
    });
    const queue = new Queue(q, { connection: redis.url() });
    try {
      await waitFor(async () => seen.size === 1 && (await queue.counts()).dead === 4, {
        what: 'one run and four dead jobs',
      });
      expect([...seen]).toEqual([
        ['good', { n: 9007199254740991, big: 9007199254740993n, at: new Date('2026-01-02T03:04:05.006Z') }],
      ]);
      const reason = async (id: string): Promise<string> => {
        const info = await queue.get(id);
        expect(info?.state).toBe('dead');
        // Undecodable: dead at once, no attempt used on a job no retry could read.
        return `${info?.lastError?.name}: ${info?.lastError?.message}`;
      };
      expect(await reason('raw-big-int')).toMatch(
        /DecodeError: .*integer literal 9007199254740993, beyond ±\(2\^53 - 1\).*"~t":"BigInt"/,
      );
      expect(await reason('date-offset')).toMatch(
        /DecodeError: .*"Date" tag whose value the string "2026-01-02T03:04:05\.006\+00:00" is not a valid toISOString\(\) timestamp \(YYYY-MM-DDTHH:mm:ss\.sssZ/,
      );
      expect(await reason('date-no-ms')).toMatch(/DecodeError: .*"Date" tag .*three millisecond digits/);
      expect(await reason('float-created')).toMatch(
        /DecodeError: .*envelope\.createdAt must be a whole number of epoch ms.*got number 1767225600000\.5/,
      );
    } finally {
      await worker.close();
      await queue.close();
    }
  });
});
