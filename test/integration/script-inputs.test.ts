/**
 * Every shipped script refuses bad input before its first write (issue 32; docs/DESIGN.md
 * invariant 10): called with each key left out, each argument left out, each argument garbage,
 * out of range or of the wrong type, and each key it writes holding another Redis type, the reply
 * is an error naming what is wrong, and a DUMP of every key of the queue is the same after as
 * before. The scripts are read off src/scripts/: one that is neither covered here nor on
 * COVERED_ELSEWHERE fails the first test, so no script ships unchecked. The specs of the schedule,
 * migrate and view scripts are in ./script-inputs/, each file seeding the state its scripts need.
 */
import { readdirSync } from 'node:fs';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Queue } from '../../src/index.js';
import { addKeys } from '../../src/operations/add.js';
import { configKey, legacyKeys, queueKeys } from '../../src/redis/keys.js';
import { expandLua } from '../../src/redis/lua-source.js';
import { decodeRecord, encodeRecord } from '../../src/record/index.js';
import { inspector, serverNow, uniqueQueue, useRedis } from '../support/fixtures.js';
import { migrateSpecs } from './script-inputs/migrate.js';
import { scheduleSpecs } from './script-inputs/schedules.js';
import { NOT_UTF8, NUMBERS, type Arg, type Spec, type SpecFactory } from './script-inputs/spec.js';
import { viewSpecs } from './script-inputs/views.js';

/**
 * Scripts whose input checks are tested elsewhere, each with where and why. A script may not be
 * both here and covered below.
 */
/* Empty since claim.lua's spec landed here; a script added to src/scripts/ needs a spec above or
 * an entry here naming its test. */
const COVERED_ELSEWHERE: Record<string, string> = {};

const redis = useRedis();
const SCRIPTS = new URL('../../src/scripts', import.meta.url).pathname;
/** Every shipped script: src/scripts/*.lua (the includes are in a folder of their own). */
const SHIPPED = readdirSync(SCRIPTS)
  .filter((f) => f.endsWith('.lua'))
  .map((f) => f.slice(0, -'.lua'.length))
  .sort();
let raw: Redis;
const queues: Queue[] = [];
beforeAll(() => {
  raw = inspector(redis.url());
});
afterAll(async () => {
  for (const q of queues) await q.close();
  await raw.quit();
});

/** A queue with a waiting job w1 and a running job r1 (held by holder 1); returns its member. */
async function seed(name: string): Promise<string> {
  const queue = new Queue(name, { connection: redis.url() });
  queues.push(queue);
  await queue.add({ w: 1 }, { id: 'w1', delay: '1h' });
  await queue.add({ r: 1 }, { id: 'r1' });
  const k = queueKeys(name);
  const now = await serverNow(raw);
  const { header, payload } = decodeRecord((await raw.hgetBuffer(k.records, 'r1'))!);
  const claimed = { ...header, attempts: 1, claims: 1, claimedAt: now, runDue: now, holder: 1 };
  const member = `1.${now}|r1`;
  await raw
    .multi()
    .zrem(k.waiting, 'r1')
    .hset(k.records, 'r1', encodeRecord(claimed, payload))
    .zadd(k.leases, now + 600_000, member)
    .exec();
  return member;
}

/** A new job's record of a flow (flags B 0x40, flow.lua) with payload {}, and one of no flow. */
const FLOW_RECORD = Buffer.from('\x01\x80\x40{}', 'latin1');
const PLAIN_RECORD = Buffer.from('\x01\x00{}', 'latin1');

function specs(name: string, member: string): Spec[] {
  const k = queueKeys(name);
  // seed() leases r1 at the claimed-at time in its member, for 600,000 ms.
  const deadline = String(Number(/^1\.(\d+)\|/.exec(member)![1]) + 600_000);
  const waiting = [
    k.waiting,
    k.prioWaiting,
    k.prioReady,
    k.groupJobs,
    k.groupsWaiting,
    k.groupsReady,
    k.groupCounts,
    k.groupBacklog,
  ];
  const old = legacyKeys(name);
  const memberBad = ['', 'r1', '1|r1', 'x.1|r1', '1.1|', NOT_UTF8];
  const idBad = ['', 'a\nb', NOT_UTF8, 'x'.repeat(1537)];
  return [
    {
      script: 'cancel',
      keys: [
        ...waiting,
        k.records,
        k.leases,
        k.cancelled,
        k.errors,
        k.wake,
        k.counters,
        k.events,
        k.progress,
        k.dead,
        k.flows,
        k.flowsWaiting,
      ],
      args: ['w1', '0', '0'],
      names: [/ARGV\[1\] id/, /ARGV\[2\] group concurrency/, /ARGV\[3\] events cap/],
      bad: [idBad, NUMBERS.filter((v) => v !== '-1'), ['', 'x', '1.5', '1e3', NOT_UTF8]],
    },
    {
      script: 'claim',
      keys: [
        ...waiting.slice(0, 7),
        k.records,
        k.leases,
        k.completed,
        k.cancelled,
        k.errors,
        k.dead,
        k.paused,
        k.limiter,
        k.events,
        k.wake,
        k.counters,
        k.progress,
        k.groupBacklog,
        k.flows,
        k.flowsWaiting,
      ],
      // An ack of r1 (its known deadline is its lease's), then a claim of one: w1 is not due.
      args: [
        '1',
        '60000',
        '1',
        '1',
        '0',
        '0',
        '0',
        '0',
        '100',
        '86400000',
        'm',
        '0',
        '1',
        member,
        deadline,
        '',
        '',
      ],
      names: [
        /ARGV\[1\] limit|ARGV has/,
        /ARGV\[2\] lease ms|ARGV has/,
        /ARGV\[3\] holder|ARGV has/,
        /ARGV\[4\] group concurrency|ARGV has/,
        /ARGV\[5\] group rate max|ARGV has/,
        /ARGV\[6\] group rate per ms|ARGV has/,
        /ARGV\[7\] rate max|ARGV has/,
        /ARGV\[8\] rate per ms|ARGV has/,
        /ARGV\[9\] dead max count|ARGV has/,
        /ARGV\[10\] dead max age ms|ARGV has/,
        /ARGV\[11\] flags|ARGV has/,
        /ARGV\[12\] events cap|ARGV has/,
        /ARGV\[13\] M|ARGV has/,
        /ack 1 of 1: member|ARGV has/,
        /ack 1 of 1: known deadline|ARGV has/,
        /ack 1 of 1: (flags|final record)|ARGV has/,
        /ack 1 of 1: flags|ARGV has/,
      ],
      bad: [
        NUMBERS,
        [...NUMBERS, '0'],
        [...NUMBERS, '4294967296'],
        NUMBERS,
        [...NUMBERS, '5'],
        NUMBERS,
        [...NUMBERS, '5'],
        NUMBERS,
        NUMBERS,
        NUMBERS,
        ['x', 'zz', 'a', 'a1001', 'a1a2', NOT_UTF8],
        ['', 'x', '1.5', NOT_UTF8],
        ['', 'x', '-1', '2', NOT_UTF8],
        memberBad,
        ['', 'x', '-1', '1.5', NOT_UTF8],
        ['x', 'ff', 'fu', 'f', 'ee', NOT_UTF8],
        ['x'],
      ],
    },
    {
      script: 'extend',
      keys: [k.leases],
      args: ['60000', '', member],
      names: [/ARGV\[1\] lease ms/, /ARGV\[2\] flags/, /ARGV\[3\] lease member/],
      bad: [[...NUMBERS, '0'], [member, 'x', 'mm', NOT_UTF8], memberBad],
      optionalFrom: 2,
    },
    {
      script: 'fail',
      keys: [
        ...waiting,
        k.records,
        k.leases,
        k.dead,
        k.errors,
        k.wake,
        k.counters,
        k.events,
        k.progress,
        k.cancelled,
        k.flows,
        k.flowsWaiting,
      ],
      args: [member, '1000', '{"name":"Error","message":"boom"}', '0', '100', '86400000', '0', 'boom', '0'],
      names: [
        /ARGV\[1\] lease member/,
        /ARGV\[2\] retry delay/,
        /ARGV\[3\] error/,
        /ARGV\[4\] unrecoverable/,
        /ARGV\[5\] dead max count/,
        /ARGV\[6\] dead max age/,
        /ARGV\[7\] group concurrency/,
        /ARGV\[8\] reason/,
        /ARGV\[9\] events cap/,
      ],
      bad: [
        memberBad,
        NUMBERS.filter((v) => v !== '-1'),
        ['', 'x', '[1', '"text"', '7'],
        ['', '2', 'yes', NOT_UTF8],
        NUMBERS,
        NUMBERS,
        NUMBERS,
        [],
        ['', 'x', '1.5', NOT_UTF8],
      ],
    },
    {
      script: 'release',
      keys: [...waiting, k.records, k.leases, k.wake, k.events, k.progress, k.counters],
      args: [member, '0', '0', '0', 'r'],
      // Without the counters (13 keys) a release still works; only a snooze needs them.
      alsoValidKeyCounts: [13],
      optionalFrom: 4,
      names: [
        /ARGV\[1\] lease member/,
        /ARGV\[2\] delay/,
        /ARGV\[3\] group concurrency/,
        /ARGV\[4\] events cap/,
        /ARGV\[5\] why/,
      ],
      bad: [memberBad, NUMBERS, NUMBERS, ['', 'x', '1.5', NOT_UTF8], ['', 'x', 'R', NOT_UTF8]],
    },
    {
      script: 'progress',
      keys: [k.leases, k.progress, k.cancelled],
      args: [member, '{"done":1}', '1024'],
      names: [/ARGV\[1\] lease member/, /ARGV\[2\] (progress )?value/, /ARGV\[3\] cap/],
      bad: [memberBad, ['', 'x'.repeat(1025)], NUMBERS],
    },
    {
      script: 'log',
      keys: [k.leases, k.logs, k.cancelled],
      args: [member, '1', 'a line', '512', '20', '50'],
      names: [
        /ARGV\[1\] lease member/,
        /ARGV\[2\] attempt/,
        /ARGV\[3\] log line/,
        /ARGV\[4\] max bytes per line/,
        /ARGV\[5\] max lines per run/,
        /ARGV\[6\] max lines per job/,
      ],
      bad: [
        memberBad,
        [...NUMBERS, '0', '65536'],
        ['', 'x'.repeat(513), 'a\nb', 'a\u0085b', NOT_UTF8],
        [...NUMBERS, '0'],
        [...NUMBERS, '0', '50'],
        [...NUMBERS, '0', '20'],
      ],
      extra: [
        {
          what: 'a value too many',
          args: [member, '1', 'a line', '512', '20', '50', 'x'],
          expect: /ARGV has 7/,
        },
      ],
    },
    {
      script: 'search',
      keys: [k.records, k.errors, k.holders, k.progress, k.waiting],
      args: ['s', '0', '281474976710654', '', '', '', '', '10', '100'],
      names: [
        /ARGV\[1\] source/,
        /ARGV\[2\] from/,
        /ARGV\[3\] to/,
        /ARGV\[4\] id prefix/,
        /ARGV\[5\] group/,
        /ARGV\[6\] position/,
        /ARGV\[7\] position/,
        /ARGV\[8\] limit/,
        /ARGV\[9\] budget/,
      ],
      bad: [
        ['', 'q', 'ss', NOT_UTF8],
        [...NUMBERS, '281474976710655'],
        [...NUMBERS, '281474976710655'],
        ['x'.repeat(1537), 'a\nb'],
        ['a\nb', 'x'.repeat(256)],
        ['x', '-1', '1.5', NOT_UTF8],
        ['w1'],
        [...NUMBERS, '0', '1001'],
        [...NUMBERS, '0', '100001'],
      ],
      extra: [
        {
          what: 'a value too many',
          args: ['s', '0', '281474976710654', '', '', '', '', '10', '100', 'x'],
          expect: /ARGV has 10/,
        },
      ],
    },
    {
      script: 'get',
      keys: [
        k.records,
        k.waiting,
        k.prioWaiting,
        k.prioReady,
        k.groupJobs,
        k.leases,
        k.completed,
        k.cancelled,
        k.dead,
        k.errors,
        k.holders,
        k.progress,
        k.flows,
        k.flowsWaiting,
      ],
      args: ['r1'],
      names: [/ARGV\[1\] id/],
      bad: [idBad],
    },
    {
      script: 'add-flow',
      keys: [...waiting, k.records, k.flows, k.flowsWaiting, k.wake, k.counters, k.events],
      // One queue; a parent fp and its child fc, both of the flow (flags B 0x40).
      args: [
        '0',
        '1',
        name,
        '0',
        '0',
        '2',
        'fp',
        'd0',
        FLOW_RECORD,
        '0',
        '',
        '1',
        'fc',
        'd0',
        FLOW_RECORD,
        '1',
        '',
        '1',
      ],
      names: [
        /ARGV\[1\] elapsed/,
        /ARGV\[2\] Q|KEYS has/,
        /ARGV\[3\] queue name/,
        /ARGV\[4\] group concurrency/,
        /ARGV\[5\]/,
        /ARGV\[6\] N/,
        /job 1 of 2: id|ARGV has/,
        /job 1 of 2: (when|due time)|ARGV has/,
        /job 1 of 2: record|ARGV has/,
        /job 1 of 2: parent|ARGV has/,
        /job 1 of 2: flags|ARGV has/,
        /job 1 of 2: queue|ARGV has/,
        /job 2 of 2: id|ARGV has/,
        /job 2 of 2: (when|due time)|ARGV has/,
        /job 2 of 2: record|ARGV has/,
        /job 2 of 2: parent|ARGV has/,
        /job 2 of 2: flags|ARGV has/,
        /job 2 of 2: queue|ARGV has/,
      ],
      bad: [
        NUMBERS,
        [...NUMBERS, '0', '2', '17'],
        ['', 'a b', '{x}', 'a\nb'],
        NUMBERS,
        ['', 'x', '1.5', NOT_UTF8],
        [...NUMBERS, '0', '1001'],
        idBad,
        ['', 'x', 'd-1', 'd1.5', 'a1', NOT_UTF8],
        ['', 'x', PLAIN_RECORD],
        ['1', 'x', ''],
        ['x', 'ii', NOT_UTF8],
        ['', 'x', '0', '2'],
        [...idBad, 'fp'],
        ['', 'x', 'd-1', 'd1.5', 'a1', NOT_UTF8],
        ['', 'x', PLAIN_RECORD],
        ['0', '2', 'x', '-1'],
        ['x', 'ii', NOT_UTF8],
        ['', 'x', '0', '2'],
      ],
    },
    {
      script: 'flow-deliver',
      // The parent's queue and the child's: here the same keys (one queue); no outbox entry.
      keys: [
        ...waiting,
        k.records,
        k.flows,
        k.flowsWaiting,
        k.wake,
        k.counters,
        k.events,
        k.errors,
        k.dead,
        k.flows,
      ],
      args: ['fc', 'other', name, '0', '0'],
      names: [
        /ARGV\[1\] child id/,
        /ARGV\[2\] queue name/,
        /ARGV\[3\] queue name/,
        /ARGV\[4\] group concurrency/,
        /ARGV\[5\]/,
      ],
      bad: [
        idBad,
        ['', 'a b', '{x}', 'a\nb'],
        ['', 'a b', '{x}', 'a\nb'],
        NUMBERS,
        ['', 'x', '1.5', NOT_UTF8],
      ],
    },
    {
      script: 'flow-outbox',
      keys: [k.flows],
      args: ['0', '10'],
      names: [/ARGV\[1\] cursor/, /ARGV\[2\] count/],
      bad: [
        ['', 'x', '-1', '1.5', '1e3', ' 1', NOT_UTF8],
        [...NUMBERS, '0', '1001'],
      ],
    },
    {
      script: 'child-results',
      keys: [k.flows],
      args: ['fp'],
      names: [/ARGV\[1\] id/],
      bad: [idBad],
    },
    {
      script: 'worker-register',
      keys: [k.holders],
      args: ['register', 'host:1:abc'],
      names: [/ARGV\[1\] operation/, /ARGV\[2\] worker id/],
      bad: [
        ['', 'Register', 'x', NOT_UTF8],
        ['', 'a\nb', NOT_UTF8, 'x'.repeat(1025)],
      ],
    },
    {
      script: 'add',
      keys: addKeys(k),
      args: ['1', '0', '0', '0', 'n1', 'dk', '0', Buffer.from('\x01\x00{}'), ''],
      names: [
        /N |ARGV has/,
        /elapsed|ARGV has/,
        /events cap|ARGV has/,
        /group concurrency|ARGV has/,
        /job 1 of 1: id|ARGV has/,
        /job 1 of 1: mode|ARGV has/,
        /job 1 of 1: delay|ARGV has/,
        /job 1 of 1: record|ARGV has/,
        /job 1 of 1: class|ARGV has/,
      ],
      bad: [
        ['', '0', 'x', '-1', '1.5', 'P', '1000000', NOT_UTF8],
        ['', 'x', '-1', '1.5', '1:5', NOT_UTF8],
        ['', 'x', '1.5', NOT_UTF8],
        NUMBERS,
        idBad,
        ['', 'd', 'dx', 'kd', NOT_UTF8],
        NUMBERS.filter((v) => v !== '99999999999999999999'),
        [
          '',
          Buffer.from([0x01]),
          Buffer.from([0x02, 0x00]),
          Buffer.from([0x01, 0x02, 0x00, 0x00]), // max attempts 0
          Buffer.from([0x01, 0x04, 0x03, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff]), // backoff kind 3
          Buffer.from([0x01, 0x04, 0x00, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff]), // backoff kind 0
          Buffer.from([0x01, 0x20, 0, 0, 0, 0]), // timeout 0
          Buffer.from([0x01, 0x80, 0x01, 0x00, 0x01]), // version 1
          Buffer.from([0x01, 0x80, 0x01, 0x00, 0x00]), // version 0
          Buffer.from([0x01, 0x01, ...Buffer.alloc(20)]), // a claim block
        ],
        ['p1', 'gx', 'x', NOT_UTF8],
      ],
    },
    {
      script: 'reschedule',
      keys: [...waiting, k.records, k.wake, k.events],
      args: ['w1', 'd', '1000', '0', '0'],
      names: [/ARGV\[1\] id/, /when-kind/, /delay/, /ARGV\[4\] group concurrency/, /events cap/],
      bad: [
        idBad,
        ['', 'x', 'D'],
        ['', 'x', '-1', '1.5', '1e3', NOT_UTF8],
        NUMBERS,
        ['', 'x', '1.5', NOT_UTF8],
      ],
    },
    {
      script: 'dead-remove',
      keys: [k.dead, k.records, k.errors, k.logs],
      alsoValidKeyCounts: [3],
      args: ['w1'],
      names: [/ARGV\[1\] id/],
      bad: [idBad],
    },
    {
      script: 'dead-retry',
      keys: [k.dead, k.records, k.errors, ...waiting, k.wake, k.events, k.counters],
      args: ['', '10', '0', '0'],
      names: [/ARGV\[1\] id/, /max jobs/, /ARGV\[3\] group concurrency/, /events cap/],
      bad: [['a\nb', NOT_UTF8], ['', 'x', '0', '1.5', NOT_UTF8], NUMBERS, ['', 'x', '1.5', NOT_UTF8]],
    },
    {
      script: 'reap',
      keys: [
        ...waiting,
        k.records,
        k.leases,
        k.dead,
        k.errors,
        k.wake,
        k.counters,
        k.events,
        k.progress,
        k.flows,
        k.flowsWaiting,
      ],
      args: ['100', '100', '86400000', '0', '0'],
      names: [
        /ARGV\[1\] max jobs/,
        /ARGV\[2\] dead max count/,
        /ARGV\[3\] dead max age/,
        /ARGV\[4\] group concurrency/,
        /events cap/,
      ],
      bad: [NUMBERS, NUMBERS, NUMBERS, NUMBERS, ['', 'x', '1.5', NOT_UTF8]],
    },
    {
      script: 'trim',
      keys: [k.completed, k.cancelled, k.dead, k.records, k.errors, k.holders, k.logs],
      alsoValidKeyCounts: [6],
      args: ['1000', '86400000', '1000', '86400000', '1000', '86400000', '100', '0', '0'],
      names: Array.from({ length: 9 }, (_, i) => new RegExp(`argument ${i + 1} `)),
      bad: Array.from({ length: 9 }, () => NUMBERS),
    },
    {
      script: 'pause',
      keys: [k.paused, k.wake],
      args: [],
      names: [],
      bad: [],
    },
    {
      script: 'config',
      keys: [configKey(name), old.layout, old.partitions, old.schedule, old.active, old.dead],
      args: ['write', '2', '', '1', 'zset', 'zset', 'json', 'json', '', '-10000', '', '', ''],
      names: [
        /ARGV\[1\] mode|ARGV has/,
        /ARGV\[2\] format|ARGV has/,
        /ARGV\[3\] partitions|ARGV has/,
        /ARGV\[4\] partitions|ARGV has/,
        /ARGV\[5\] layout|ARGV has/,
        /ARGV\[6\] layout|ARGV has/,
        /ARGV\[7\] codec|ARGV has/,
        /ARGV\[8\] codec|ARGV has/,
        /ARGV\[9\] events|ARGV has/,
        /ARGV\[10\] events|ARGV has/,
        /ARGV\[11\] version|ARGV has/,
        /ARGV\[12\] groups.concurrency|ARGV has/,
        /ARGV\[13\] groups.limit|ARGV has/,
      ],
      bad: [
        ['', 'Write', 'x'],
        ['', '0', '02', 'x'],
        ['01', '0', 'x', '1025', '-1'],
        ['', '01', '0', 'x'],
        ['wheel', 'wheel:0', 'list'],
        ['', 'wheel:', 'x'],
        ['a\nb'],
        ['', 'a\nb'],
        ['x', '1.5', '01', '--1'],
        ['', 'x', '1.5'],
        ['0', 'abc', '65536', '01'],
        ['0', 'x', '1000001'],
        ['x', '0/1', '1/0', '1/'],
      ],
    },
  ];
}

/** Every key of queue `name` with its DUMP. */
async function snapshot(name: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const key of (await raw.keys(`dq:{${name}}:*`)).sort()) {
    out.set(key, (await raw.dumpBuffer(key))?.toString('hex') ?? 'gone');
  }
  return out;
}

interface Case {
  what: string;
  keys: string[];
  args: Arg[];
  expect: RegExp;
  /** KEYS index (0-based) to make another type than the script requires, for this case only. */
  wrongType?: number;
}

function cases(spec: Spec): Case[] {
  const out: Case[] = [];
  spec.keys.forEach((_, i) => {
    if (spec.alsoValidKeyCounts?.includes(spec.keys.length - 1)) return;
    out.push({
      what: `KEYS[${i + 1}] left out`,
      keys: spec.keys.filter((_, j) => j !== i),
      args: spec.args,
      expect: /KEYS has/,
    });
  });
  if (!spec.moreKeysValid) {
    out.push({
      what: 'one key too many',
      keys: [...spec.keys, 'dq:{x}:extra'],
      args: spec.args,
      expect: /KEYS has/,
    });
  }
  spec.args.forEach((_, i) => {
    const name = spec.names[i]!;
    if ((spec.optionalFrom === undefined || i < spec.optionalFrom) && !spec.validLengths?.includes(i)) {
      out.push({
        what: `ARGV[${i + 1}] left out`,
        keys: spec.keys,
        args: spec.args.slice(0, i),
        expect: name,
      });
    }
    for (const value of spec.bad[i] ?? []) {
      const args = [...spec.args];
      args[i] = value;
      const shown = Buffer.isBuffer(value)
        ? `0x${value.toString('hex')}`
        : JSON.stringify(value).slice(0, 30);
      out.push({ what: `ARGV[${i + 1}] = ${shown}`, keys: spec.keys, args, expect: name });
    }
  });
  for (const extra of spec.extra ?? []) out.push({ ...extra, keys: spec.keys });
  [...(spec.types ?? '')].forEach((letter, i) => {
    if (letter === '-') return;
    out.push({
      what: `KEYS[${i + 1}] of another type`,
      keys: spec.keys,
      args: spec.args,
      expect: new RegExp(`KEYS\\[${i + 1}\\] \\S+ holds a \\w+, not a`),
      wrongType: i,
    });
  });
  return out;
}

/** Make `key` hold another type than `letter` (check_key_types' letters); returns its old DUMP. */
async function retype(key: string, letter: string): Promise<Buffer | null> {
  const original = await raw.dumpBuffer(key);
  await raw.del(key);
  if (letter === 's') await raw.hset(key, 'not', 'a string');
  else await raw.set(key, 'not a collection');
  return original;
}

async function restore(key: string, original: Buffer | null): Promise<void> {
  await raw.del(key);
  if (original) await raw.restore(key, 0, original);
}

/**
 * Runs every case of `spec` with `source`; returns what went wrong (empty: every call was refused
 * with an error naming the argument, and no key changed).
 */
async function violations(name: string, spec: Spec, source: string): Promise<string[]> {
  const problems: string[] = [];
  for (const c of cases(spec)) {
    const retyped = c.wrongType === undefined ? undefined : spec.keys[c.wrongType]!;
    const original = retyped === undefined ? null : await retype(retyped, spec.types![c.wrongType!]!);
    const before = await snapshot(name);
    let reply: unknown;
    let error: string | undefined;
    try {
      reply = await raw.eval(source, c.keys.length, ...c.keys, ...c.args);
    } catch (e) {
      error = (e as Error).message;
    }
    const after = await snapshot(name);
    if (retyped !== undefined) await restore(retyped, original);
    const changed = [...new Set([...before.keys(), ...after.keys()])].filter(
      (k) => before.get(k) !== after.get(k),
    );
    if (error === undefined)
      problems.push(`${spec.script} ${c.what}: no error (reply ${JSON.stringify(reply)})`);
    else if (!/^DELAYQ_BAD_ARG /.test(error) || !c.expect.test(error)) {
      problems.push(`${spec.script} ${c.what}: error ${error.slice(0, 160)} does not match ${c.expect}`);
    }
    if (changed.length > 0) problems.push(`${spec.script} ${c.what}: changed ${changed.join(', ')}`);
  }
  return problems;
}

/** The specs of the producer's and worker's scripts (above), each on the queue seed() writes. */
const producerAndWorkerSpecs: Record<string, SpecFactory> = Object.fromEntries(
  specs('q', '1.1|r1').map(({ script }) => [
    script,
    async ({ name }) => specs(name, await seed(name)).find((s) => s.script === script)!,
  ]),
);

const FACTORIES: Record<string, SpecFactory> = {
  ...producerAndWorkerSpecs,
  ...scheduleSpecs,
  ...migrateSpecs,
  ...viewSpecs,
};

describe('every shipped script refuses bad input before it writes', () => {
  it('covers every script in src/scripts, or says where it is covered instead', () => {
    const covered = Object.keys(FACTORIES);
    const elsewhere = Object.keys(COVERED_ELSEWHERE);
    expect(SHIPPED.filter((s) => !covered.includes(s) && !elsewhere.includes(s))).toEqual([]);
    expect(covered.filter((s) => elsewhere.includes(s))).toEqual([]);
    expect([...covered, ...elsewhere].filter((s) => !SHIPPED.includes(s))).toEqual([]);
  });

  for (const script of Object.keys(FACTORIES)) {
    it(script, async () => {
      const name = uniqueQueue(script);
      const spec = await FACTORIES[script]!({
        raw,
        url: redis.url(),
        name,
        track: (q) => void queues.push(q),
      });
      const source = expandLua(SCRIPTS, `${script}.lua`);
      expect(await violations(name, spec, source)).toEqual([]);
      // The good call is accepted, so the refusals above were the arguments', not the state's.
      await expect(raw.eval(source, spec.keys.length, ...spec.keys, ...spec.args)).resolves.toBeDefined();
    });
  }

  it('catches a mutant of cancel.lua that writes before its checks', async () => {
    const name = uniqueQueue('mutant');
    const member = await seed(name);
    const spec = specs(name, member).find((s) => s.script === 'cancel')!;
    const source = expandLua(SCRIPTS, 'cancel.lua');
    const write = "redis.call('HINCRBY', K.n, 'cancelled', 1)";
    const firstCheck = 'local key_problem = check_key_count(19, true)';
    expect(source).toContain(write);
    expect(source).toContain(firstCheck);
    const mutant = source
      .replace(write, '')
      .replace(firstCheck, `redis.call('HINCRBY', KEYS[14] or KEYS[1], 'cancelled', 1)\n${firstCheck}`);
    const found = await violations(name, spec, mutant);
    expect(found.length).toBeGreaterThan(0);
    expect(found.join('\n')).toMatch(/cancel ARGV\[1\] = "": changed dq:\{mutant-[0-9a-f]+\}:n/);
  });

  it('catches a mutant of schedule-upsert.lua that checks the key types after its first write', async () => {
    const name = uniqueQueue('mutant');
    const spec = await scheduleSpecs['schedule-upsert']!({
      raw,
      url: redis.url(),
      name,
      track: (q) => void queues.push(q),
    });
    const source = expandLua(SCRIPTS, 'schedule-upsert.lua');
    const typeCheck = "local type_problem = check_key_types('hhz-hzzzzzzhzhh', true)";
    const firstWrite = "redis.call('HSET', K.schedules, name, definition)";
    expect(source).toContain(typeCheck);
    expect(source).toContain(firstWrite);
    const mutant = source
      .replace(typeCheck, 'local type_problem = nil')
      .replace(
        firstWrite,
        `${firstWrite}\n${typeCheck}\nif type_problem then return bad_arg(type_problem) end`,
      );
    const found = (await violations(name, spec, mutant)).join('\n');
    // A payloads key of another type now fails the second HSET after the first wrote.
    expect(found).toMatch(
      /schedule-upsert KEYS\[2\] of another type: .*changed dq:\{mutant-[0-9a-f]+\}:schedules/s,
    );
  });
});
