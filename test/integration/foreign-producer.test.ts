/**
 * A producer in another language has no TypeScript in front of it: it calls add.lua with whatever it
 * wrote (docs/PROTOCOL.md: a record per job, header then payload). Played here with raw EVAL calls
 * and key names spelled out by hand, every mistake such a producer is likely to make is either
 * refused by the script with DELAYQ_BAD_ARG and nothing written, or accepted and then
 * dead-lettered with a reason that names the problem. None is run with a silently altered value
 * (docs/DESIGN.md invariant 10).
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

/** The keys of queue `q` by role, spelled out as PROTOCOL.md gives them. */
const key = (q: string, role: string): string => `dq:{${q}}:${role}`;
const ADD_ROLES = [
  's',
  'p',
  'r',
  'gq',
  'gw',
  'gr',
  'gc',
  'j',
  'c',
  'x',
  'd',
  'w',
  'n',
  'ev',
  'a',
  'gn',
  'lg',
];

/** A record: format 0x01, flags A, the given field bytes, then the payload. */
function record(payload: string, flagsA = 0x00, fields: number[] = []): Buffer {
  return Buffer.concat([Buffer.from([0x01, flagsA, ...fields]), Buffer.from(payload)]);
}

interface RawJob {
  id: string;
  mode: string;
  when: string;
  record: Buffer | string;
  class: string;
}

/** Jobs through add.lua, as a foreign producer would call it (elapsed 0, events cap 100). */
function rawAdd(q: string, ...jobs: RawJob[]): Promise<unknown> {
  const keys = ADD_ROLES.map((role) => key(q, role));
  return raw.callBuffer(
    'EVAL',
    ADD_LUA,
    keys.length,
    ...keys,
    String(jobs.length),
    '0',
    '100',
    '0',
    ...jobs.flatMap((j) => [j.id, j.mode, j.when, j.record, j.class]),
  );
}

/** add.lua's reply as [code, time] pairs. */
/** add.lua's reply as (code, time) per job, without the server's TIME that ends it. */
function pairs(reply: unknown): Array<[string, number]> {
  const flat = reply as Array<Buffer | number>;
  const out: Array<[string, number]> = [];
  for (let i = 0; i + 1 < flat.length; i += 2) out.push([String(flat[i]), Number(String(flat[i + 1]))]);
  return out;
}

async function keysOfQueue(q: string): Promise<string[]> {
  return (await raw.keys(`dq:{${q}}:*`)).sort();
}

describe('refused by add.lua, nothing written', () => {
  const good: RawJob = { id: 'j', mode: 'dk', when: '0', record: record('1'), class: '' };
  it.each([
    ['a negative delay', { when: '-5' }, /job 1 of 1: delay -5 is not a whole number of ms >= 0/],
    ['a fractional delay', { when: '1.5' }, /delay 1\.5 is not a whole number/],
    ['a delay in exponent form', { when: '1e3' }, /delay 1e3 is not a whole number/],
    [
      'a due time in 1970 (epoch seconds passed as ms)',
      { mode: 'ak', when: '1767225600' },
      /due time 1767225600 is before 2000-01-01.*epoch seconds instead of ms\?/,
    ],
    ['a due time after 9999', { mode: 'ak', when: '999999999999999' }, /after 9999-12-31/],
    ['an unknown mode', { mode: 'dx' }, /mode dx is not d or a followed by k/],
    ['a mode without its second letter', { mode: 'd' }, /mode d is not d or a followed by k/],
    ['an empty id', { id: '' }, /id is empty/],
    ['an id with a newline', { id: 'a\nb' }, /id contains a control character/],
    ['an empty record', { record: '' }, /record is truncated/],
    [
      'an unknown format byte',
      { record: Buffer.from([0x02, 0x00, 0x31]) },
      /record format byte 2 is unknown/,
    ],
    [
      'a reserved flag bit (a newer format)',
      { record: Buffer.from([0x01, 0x80, 0x80, 0x31]) },
      /reserved bits/,
    ],
    [
      "the flow flag (only add-flow.lua writes a flow's job)",
      { record: Buffer.from([0x01, 0x80, 0x40, 0x31]) },
      /F flag/,
    ],
    [
      'a header cut short (M announced, 1 byte left)',
      { record: Buffer.from([0x01, 0x02, 0x00]) },
      /truncated/,
    ],
    [
      'a claim block of a claimed job (only a claim writes one)',
      { record: record('1', 0x01, [0, 1, 0, 1, ...new Array<number>(16).fill(0)]) },
      /DELAYQ_BAD_ARG.*the C flag \(a claim block\)/,
    ],
    [
      'an empty claim block (claims 0): a producer never sends one',
      { record: record('1', 0x01, new Array<number>(20).fill(0)) },
      /DELAYQ_BAD_ARG.*the C flag \(a claim block\)/,
    ],
    ['a completed record', { record: Buffer.from([0x01, 0x80, 0x08]) }, /not a new job's/],
    [
      'a priority in the header but the default class',
      { record: record('1', 0x08, [0xff, 0xfb]) },
      /class is default but the record has priority -5/,
    ],
    ['a priority class the header does not have', { class: 'p-5' }, /disagrees with the record's priority 0/],
    ['a priority out of range', { class: 'p2000' }, /priority must be -1024\.\.1023/],
    ['a group class the header does not have', { class: 'gtenant' }, /but the record has no group/],
    [
      'a group in the header under the default class',
      // G: length 1, 'a', due 0 (the script writes it).
      { record: record('1', 0x10, [1, 0x61, 0, 0, 0, 0, 0, 0]) },
      /disagrees with the record's group a/,
    ],
    [
      'a group class naming another group than the header',
      { record: record('1', 0x10, [1, 0x61, 0, 0, 0, 0, 0, 0]), class: 'gb' },
      /class gb disagrees with the record's group a/,
    ],
  ])('%s', async (_what, change, reason) => {
    const q = uniqueQueue('foreign');
    await expect(rawAdd(q, { ...good, ...change })).rejects.toThrow(reason);
    expect(await keysOfQueue(q)).toEqual([]);
  });

  it('refuses a whole batch when one of its jobs is bad, and malformed call arguments', async () => {
    const q = uniqueQueue('foreign');
    const keys = ADD_ROLES.map((role) => key(q, role));
    const ok = ['ok', 'dk', '0', record('1'), ''];
    const bad = ['bad', 'dk', '-1', record('1'), ''];
    const call = (...argv: Array<string | Buffer>) =>
      raw.callBuffer('EVAL', ADD_LUA, keys.length, ...keys, ...argv);
    await expect(call('2', '0', '100', '0', ...ok, ...bad)).rejects.toThrow(
      /DELAYQ_BAD_ARG job 2 of 2: delay -1/,
    );
    await expect(call('2', '0', '100', '0', ...ok)).rejects.toThrow(
      /DELAYQ_BAD_ARG ARGV has 9 values; N = 2/,
    );
    await expect(call('0', '0', '100', '0')).rejects.toThrow(/DELAYQ_BAD_ARG N 0/);
    await expect(call('1', '-3', '100', '0', ...ok)).rejects.toThrow(/DELAYQ_BAD_ARG elapsed -3/);
    await expect(call('1', '0', 'ten', '0', ...ok)).rejects.toThrow(/DELAYQ_BAD_ARG events cap ten/);
    expect(await keysOfQueue(q)).toEqual([]);
  });

  it('replaces a waiting job in mode r; mode k keeps it; mode n answers T for a taken id', async () => {
    const q = uniqueQueue('foreign');
    const job = (mode: string, payload: string): RawJob => ({
      id: 'j',
      mode,
      when: '3600000',
      record: record(payload),
      class: '',
    });
    expect(pairs(await rawAdd(q, job('dk', '1')))[0]![0]).toBe('c');
    expect(pairs(await rawAdd(q, job('dk', '2')))[0]![0]).toBe('k');
    expect(pairs(await rawAdd(q, job('dn', '3')))[0]).toEqual(['T', -1]);
    expect(await raw.hgetBuffer(key(q, 'j'), 'j')).toEqual(record('1'));
    const [[code, runAt]] = pairs(await rawAdd(q, job('dr', '4'))) as [[string, number]];
    expect(code).toBe('R');
    expect(await raw.hgetBuffer(key(q, 'j'), 'j')).toEqual(record('4'));
    expect(Number(await raw.zscore(key(q, 's'), 'j'))).toBe(runAt);
    expect(await raw.zcard(key(q, 's'))).toBe(1);
  });

  it('puts a prioritized job in p (not due) or r (due), by its class', async () => {
    const q = uniqueQueue('foreign');
    const prio = (id: string, when: string): RawJob => ({
      id,
      mode: 'dk',
      when,
      record: record('1', 0x08, [0xff, 0xfb]),
      class: 'p-5',
    });
    await rawAdd(q, prio('later', '3600000'), prio('now', '0'));
    expect(await raw.zrange(key(q, 'p'), 0, -1)).toEqual(['-5:later']);
    expect(await raw.zrange(key(q, 'r'), 0, -1)).toEqual(['-5:now']);
    expect(await raw.zcard(key(q, 's'))).toBe(0);
  });

  it('checks reschedule.lua the same way', async () => {
    const q = uniqueQueue('foreign');
    await rawAdd(q, { ...good, when: '3600000' });
    const before = await raw.zscore(key(q, 's'), 'j');
    const keys = ['s', 'p', 'r', 'gq', 'gw', 'gr', 'gc', 'gn', 'j', 'w', 'ev'].map((role) => key(q, role));
    await expect(
      raw.eval(RESCHEDULE_LUA, keys.length, ...keys, 'j', 'a', '5000', '0', '100'),
    ).rejects.toThrow(/DELAYQ_BAD_ARG due time 5000 is before 2000-01-01/);
    await expect(raw.eval(RESCHEDULE_LUA, keys.length, ...keys, 'j', 'd', '-1', '0', '100')).rejects.toThrow(
      /DELAYQ_BAD_ARG delay -1 is not a whole number/,
    );
    expect(await raw.zscore(key(q, 's'), 'j')).toBe(before);
  });

  it('checks the delays a worker in another language passes to fail.lua and release.lua', async () => {
    const q = uniqueQueue('foreign');
    await rawAdd(q, good);
    const failKeys = [
      's',
      'p',
      'r',
      'gq',
      'gw',
      'gr',
      'gc',
      'gn',
      'j',
      'a',
      'd',
      'e',
      'w',
      'n',
      'ev',
      'pg',
      'x',
      'f',
      'fw',
    ].map((role) => key(q, role));
    const fail = (delay: string) =>
      raw.eval(
        FAIL_LUA,
        failKeys.length,
        ...failKeys,
        '1.1|j',
        delay,
        '{"name":"Error","message":"x"}',
        '0',
        '10',
        '0',
        '0',
        'x',
        '100',
      );
    await expect(fail('-5')).rejects.toThrow(
      /DELAYQ_BAD_ARG ARGV\[2\] retry delay -5 is not -1 or a whole number of ms/,
    );
    await expect(fail('2.5')).rejects.toThrow(/DELAYQ_BAD_ARG ARGV\[2\] retry delay 2\.5/);
    // A valid delay passes the check and meets the lease check: this member holds no lease.
    await expect(fail('100')).rejects.toThrow(/DELAYQ_LEASE_LOST/);
    const releaseKeys = ['s', 'p', 'r', 'gq', 'gw', 'gr', 'gc', 'gn', 'j', 'a', 'w', 'ev', 'pg'].map((role) =>
      key(q, role),
    );
    await expect(
      raw.eval(RELEASE_LUA, releaseKeys.length, ...releaseKeys, '1.1|j', '-1', '0', '100'),
    ).rejects.toThrow(/DELAYQ_BAD_ARG ARGV\[2\] delay -1 is not a whole number of ms >= 0/);
    // The current form: the counters hash and why ('r' release, 's' snooze), checked too.
    const releaseKeys13 = [...releaseKeys, key(q, 'n')];
    await expect(
      raw.eval(RELEASE_LUA, releaseKeys13.length, ...releaseKeys13, '1.1|j', '100', '0', '100', 'x'),
    ).rejects.toThrow(/DELAYQ_BAD_ARG ARGV\[5\] why x is not r \(release\) or s \(snooze\)/);
    await expect(
      raw.eval(RELEASE_LUA, releaseKeys.length, ...releaseKeys, '1.1|j', '100', '0', '100', 's'),
    ).rejects.toThrow(/DELAYQ_BAD_ARG a snooze needs KEYS\[14\]/);
    // Valid: the lease check answers (this member holds no lease: 0, nothing written).
    expect(
      await raw.eval(RELEASE_LUA, releaseKeys13.length, ...releaseKeys13, '1.1|j', '100', '0', '100', 's'),
    ).toBe(0);
    expect(await raw.zscore(key(q, 's'), 'j')).not.toBeNull();
    expect(await raw.hlen(key(q, 'e'))).toBe(0);
    expect(await raw.hget(key(q, 'n'), 'snoozed')).toBeNull();
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
      expect(await queue.counts()).toMatchObject({ scheduled: 0, due: 0, active: 0, dead: 0 });
      await expect(queue.add(1, { runAt: 1767225600 })).rejects.toThrow(
        /runAt must lie between 2000-01-01 and 9999-12-31.*epoch seconds instead of ms\?/,
      );
    } finally {
      await queue.close();
    }
  });
});

describe('accepted by add.lua (it cannot read a payload), then dead-lettered with a named reason', () => {
  it('runs the good job with its values intact and buries each bad one, naming why', async () => {
    const q = uniqueQueue('foreign');
    const jobs: Array<[string, string]> = [
      [
        'good',
        '{"n":9007199254740991,"big":{"~t":"BigInt","v":"9007199254740993"},"at":{"~t":"Date","v":"2026-01-02T03:04:05.006Z"}}',
      ],
      ['raw-big-int', '{"n":9007199254740993}'],
      ['date-offset', '{"~t":"Date","v":"2026-01-02T03:04:05.006+00:00"}'],
      ['date-no-ms', '{"~t":"Date","v":"2026-01-02T03:04:05Z"}'],
      ['not-json', '{"n":'],
    ];
    const reply = await rawAdd(
      q,
      ...jobs.map(([id, payload]) => ({ id, mode: 'dk', when: '0', record: record(payload), class: '' })),
    );
    expect(pairs(reply).map(([code]) => code)).toEqual(['c', 'c', 'c', 'c', 'c']);
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
      expect(await reason('not-json')).toMatch(/DecodeError: /);
    } finally {
      await worker.close();
      await queue.close();
    }
  });
});
