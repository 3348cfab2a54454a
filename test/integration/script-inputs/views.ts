/**
 * The specs of the views' and operators' scripts for test/integration/script-inputs.test.ts:
 * counts, list, the groups' scripts, configure, repartition, resume and stats. Each runs on a queue with a
 * waiting job, a running one, and a waiting job of group `grp`.
 */
import { Queue } from '../../../src/index.js';
import { configKey, queueKeys } from '../../../src/redis/keys.js';
import { CAP_BAD, GROUP_BAD, NOT_UTF8, NUMBERS, type SpecContext, type SpecFactory } from './spec.js';

/** A queue (its config record written) with w1 waiting, g1 waiting in group grp, and a running job. */
async function seedQueue(ctx: SpecContext): Promise<Queue> {
  const queue = new Queue(ctx.name, { connection: ctx.url });
  ctx.track(queue);
  await queue.add({ w: 1 }, { id: 'w1', delay: '1h' });
  await queue.add({ g: 1 }, { id: 'g1', delay: '1h', group: 'grp' });
  const k = queueKeys(ctx.name);
  await ctx.raw.zadd(k.leases, Date.now() + 600_000, `1.${Date.now()}|r1`);
  return queue;
}

const OFFSET_BAD = ['', 'x', '-1', '1.5', NOT_UTF8];
const LIMIT_BAD = ['', '0', '10001', 'x', '1.5', NOT_UTF8];

export const viewSpecs: Record<string, SpecFactory> = {
  counts: async (ctx) => {
    await seedQueue(ctx);
    const k = queueKeys(ctx.name);
    return {
      script: 'counts',
      keys: [
        k.waiting,
        k.prioWaiting,
        k.prioReady,
        k.groupJobs,
        k.groupsWaiting,
        k.groupsReady,
        k.groupCounts,
        k.leases,
        k.dead,
        k.completed,
        k.cancelled,
        k.paused,
        k.flowsWaiting,
      ],
      args: ['0', '0', '0'],
      names: [/ARGV\[1\] group concurrency/, /ARGV\[2\] slice ms/, /ARGV\[3\] slices/],
      bad: [NUMBERS, NUMBERS, [...NUMBERS, '1441', '5']],
      extra: [{ what: 'a value more', args: ['0', '0', '0', '0'], expect: /ARGV has 4 values/ }],
    };
  },

  list: async (ctx) => {
    await seedQueue(ctx);
    const k = queueKeys(ctx.name);
    return {
      script: 'list',
      keys: [
        k.records,
        k.waiting,
        k.prioWaiting,
        k.prioReady,
        k.leases,
        k.completed,
        k.cancelled,
        k.dead,
        k.errors,
        k.holders,
        k.progress,
      ],
      args: ['active', '0', '10', '0'],
      names: [/ARGV\[1\] state/, /ARGV\[2\] offset/, /ARGV\[3\] limit/, /ARGV\[4\] newest/],
      bad: [['', 'Active', 'x', NOT_UTF8], OFFSET_BAD, ['', '0', 'x', '1.5', NOT_UTF8], ['', '2', 'x']],
      extra: [{ what: 'a value more', args: ['active', '0', '10', '0', 'x'], expect: /ARGV has 5 values/ }],
    };
  },

  'groups-list': async (ctx) => {
    await seedQueue(ctx);
    const k = queueKeys(ctx.name);
    return {
      script: 'groups-list',
      keys: [k.groupBacklog, k.groupJobs, k.groupCounts],
      args: ['0', '10'],
      names: [/ARGV\[1\] offset/, /ARGV\[2\] limit/],
      bad: [OFFSET_BAD, LIMIT_BAD],
    };
  },

  'group-jobs': async (ctx) => {
    await seedQueue(ctx);
    const k = queueKeys(ctx.name);
    return {
      script: 'group-jobs',
      keys: [k.records, k.groupJobs, k.leases, k.errors, k.holders, k.progress],
      args: ['waiting', 'grp', '0', '10'],
      names: [/ARGV\[1\] state/, /ARGV\[2\] group/, /ARGV\[3\] offset/, /ARGV\[4\] limit/],
      bad: [['', 'dead', 'x'], GROUP_BAD, OFFSET_BAD, LIMIT_BAD],
    };
  },

  'group-cancel': async (ctx) => {
    await seedQueue(ctx);
    const k = queueKeys(ctx.name);
    return {
      script: 'group-cancel',
      keys: [
        k.groupJobs,
        k.groupsWaiting,
        k.groupsReady,
        k.groupCounts,
        k.groupBacklog,
        k.records,
        k.cancelled,
        k.errors,
        k.counters,
        k.events,
      ],
      args: ['grp', '10', '0'],
      names: [/ARGV\[1\] group/, /ARGV\[2\] max jobs/, /ARGV\[3\] events cap/],
      bad: [GROUP_BAD, ['', '0', '1001', 'x', '1.5'], CAP_BAD],
      // gq gw gr, gc, gn, j, x, e, n, ev
      types: 'zzzhzhzhhx',
    };
  },

  'group-pause': async (ctx) => {
    await seedQueue(ctx);
    const k = queueKeys(ctx.name);
    return {
      script: 'group-pause',
      keys: [k.groupsWaiting, k.groupsReady, k.groupCounts],
      args: ['grp'],
      names: [/ARGV\[1\] group/],
      bad: [GROUP_BAD],
      types: 'zzh',
    };
  },

  'group-resume': async (ctx) => {
    const queue = await seedQueue(ctx);
    await queue.groups.pause('grp');
    const k = queueKeys(ctx.name);
    return {
      script: 'group-resume',
      keys: [k.groupJobs, k.groupsWaiting, k.groupsReady, k.groupCounts, k.wake],
      args: ['grp', '0'],
      names: [/ARGV\[1\] group/, /ARGV\[2\] group concurrency/],
      bad: [GROUP_BAD, NUMBERS],
      // gq gw gr, gc, w (a channel)
      types: 'zzzh-',
    };
  },

  'group-refresh': async (ctx) => {
    await seedQueue(ctx);
    const k = queueKeys(ctx.name);
    return {
      script: 'group-refresh',
      keys: [k.groupJobs, k.groupsWaiting, k.groupsReady, k.groupCounts, k.wake],
      args: ['5', 'grp'],
      names: [/ARGV\[1\] group concurrency/, /ARGV\[2\] group|ARGV\[2\.\.\.\] groups/],
      bad: [['', '0', 'x', '1.5', '1000001', NOT_UTF8], GROUP_BAD],
      optionalFrom: 2,
      types: 'zzzh-',
    };
  },

  configure: async (ctx) => {
    await seedQueue(ctx);
    return {
      script: 'configure',
      keys: [configKey(ctx.name)],
      args: ['groups.concurrency', '5'],
      names: [/ARGV\[1\] field|ARGV must be/, /ARGV\[2\] groups\.concurrency value|ARGV must be/],
      bad: [
        ['', 'format', 'groups.concurrencyx', NOT_UTF8],
        ['', '0', 'x', '1000001', '01'],
      ],
      extra: [
        {
          what: 'a field twice',
          args: ['groups.concurrency', '5', 'groups.concurrency', '6'],
          expect: /ARGV\[3\] field groups\.concurrency is given twice/,
        },
        {
          what: 'a malformed group limit',
          args: ['groups.limit', '5/0'],
          expect: /ARGV\[2\] groups\.limit value 5\/0/,
        },
      ],
      types: 'h',
    };
  },

  repartition: async (ctx) => {
    await seedQueue(ctx);
    return {
      script: 'repartition',
      keys: [configKey(ctx.name)],
      args: ['4'],
      names: [/ARGV\[1\] partitions|ARGV has/],
      bad: [['', '0', '01', '1025', 'x', '-1', '1.5', NOT_UTF8]],
      extra: [{ what: 'a second value', args: ['4', '5'], expect: /ARGV has 2 values/ }],
      types: 'h',
    };
  },

  resume: async (ctx) => {
    const queue = await seedQueue(ctx);
    await queue.pause();
    const k = queueKeys(ctx.name);
    return {
      script: 'resume',
      keys: [k.paused, k.wake, k.waiting, k.prioWaiting, k.prioReady, k.groupsWaiting],
      args: [],
      names: [],
      bad: [],
      // A seventh key is the wheel's wr.
      moreKeysValid: true,
      extra: [{ what: 'an argument', args: ['x'], expect: /ARGV has 1 values; resume takes 0/ }],
      // z, w (a channel), s p r gw
      types: 's-zzzz',
    };
  },

  stats: async (ctx) => {
    await seedQueue(ctx);
    const k = queueKeys(ctx.name);
    return {
      script: 'stats',
      keys: [k.counters],
      args: ['added', '1', 'claimed', '2'],
      names: [
        /ARGV\[1\] counter/,
        /ARGV\[2\] delta|has no delta/,
        /ARGV\[3\] counter/,
        /ARGV\[4\] delta|has no delta/,
      ],
      bad: [['', 'x', 'Added', NOT_UTF8], NUMBERS, ['', 'x', 's:1'], NUMBERS],
      // No deltas, or one pair: a flush with nothing (or one counter) to add.
      validLengths: [0, 2],
      types: 'h',
    };
  },
};
