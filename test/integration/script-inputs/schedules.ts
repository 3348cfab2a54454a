/**
 * The schedule-*.lua scripts' specs for test/integration/script-inputs.test.ts, each on a queue
 * with one repeating schedule `tick` (every hour) declared through queue.schedule.
 */
import { Queue } from '../../../src/index.js';
import { configKey, queueKeys } from '../../../src/redis/keys.js';
import { NOT_UTF8, type Arg, type SpecContext, type SpecFactory } from './spec.js';

/** A queue with a waiting job and the schedule `tick`; its keys, and tick's rev and mark. */
async function seedSchedule(ctx: SpecContext): Promise<{ rev: string; mark: number }> {
  const queue = new Queue(ctx.name, { connection: ctx.url });
  ctx.track(queue);
  await queue.add({ w: 1 }, { id: 'w1', delay: '1h' });
  await queue.schedule('tick', { every: 3_600_000 }, { n: 1 });
  const k = queueKeys(ctx.name);
  const stored = JSON.parse((await ctx.raw.hget(k.schedules, 'tick'))!) as { rev: string };
  return { rev: stored.rev, mark: Number(await ctx.raw.zscore(k.scheduleLast, 'tick')) };
}

function waiting(name: string): string[] {
  const k = queueKeys(name);
  return [
    k.waiting,
    k.prioWaiting,
    k.prioReady,
    k.groupJobs,
    k.groupsWaiting,
    k.groupsReady,
    k.groupCounts,
    k.groupBacklog,
  ];
}

/** Values no schedule name may be: empty, white space, a control character, not UTF-8, over 600 bytes. */
const NAME_BAD: Arg[] = ['', 'a b', 'a\nb', NOT_UTF8, 'x'.repeat(601)];

/** A stored definition in the form the schedulers read (src/schedule/definition.ts). */
function definition(rev: string, change: Record<string, unknown> = {}): string {
  return JSON.stringify({
    v: 2,
    rev,
    spec: { every: 3_600_000 },
    missed: 'skip',
    grace: 1000,
    m: 3,
    version: 1,
    ...change,
  });
}

export const scheduleSpecs: Record<string, SpecFactory> = {
  'schedule-upsert': async (ctx) => {
    await seedSchedule(ctx);
    const k = queueKeys(ctx.name);
    return {
      script: 'schedule-upsert',
      keys: [
        k.schedules,
        k.schedulePayloads,
        k.scheduleLast,
        k.scheduleWake,
        configKey(ctx.name),
        ...waiting(ctx.name),
        k.records,
        k.errors,
      ],
      args: ['tock', 'abc123', definition('abc123'), Buffer.from('{"n":2}')],
      names: [
        /ARGV\[1\] schedule name/,
        /ARGV\[2\] rev|disagrees with the rev passed/,
        /ARGV\[3\] definition/,
        /ARGV\[4\] payload template/,
      ],
      bad: [
        NAME_BAD,
        ['', 'a-b', NOT_UTF8, 'x'.repeat(65), 'def456'],
        [
          '',
          'x',
          '[]',
          definition('abc123', { v: 1 }),
          definition('abc123', { spec: {} }),
          definition('abc123', { missed: 'never' }),
          definition('abc123', { grace: -1 }),
          definition('abc123', { grace: 1.5 }),
          definition('abc123', { m: 0 }),
          definition('abc123', { version: 0 }),
          definition('other1'),
        ],
        [],
      ],
      // schedules, payloads, last, wake (a channel), config, s p r gq gw gr, gc, gn, j, e
      types: 'hhz-hzzzzzzhzhh',
    };
  },

  'schedule-tick': async (ctx) => {
    const { rev, mark } = await seedSchedule(ctx);
    const k = queueKeys(ctx.name);
    const [d1, d2] = [String(mark + 3_600_000), String(mark + 7_200_000)];
    return {
      script: 'schedule-tick',
      keys: [
        ...waiting(ctx.name),
        k.records,
        k.wake,
        k.counters,
        k.events,
        k.schedules,
        k.scheduleLast,
        k.scheduleWake,
        configKey(ctx.name),
      ],
      args: ['tick', rev, String(mark), '1000', 'skip', '0', Buffer.from('\x01\x00{"n":1}'), '2', d1, d2],
      names: [
        /ARGV\[1\] schedule name/,
        /ARGV\[2\] rev/,
        /ARGV\[3\] high-water mark|ARGV\[9\] due time \d+ is not after the mark/,
        /ARGV\[4\] grace/,
        /ARGV\[5\] missed policy/,
        /ARGV\[6\] events cap/,
        /ARGV\[7\] occurrence/,
        /ARGV\[8\] C|ARGV has/,
        /ARGV\[9\] due time|ARGV has/,
        /ARGV\[10\] due time|ARGV has/,
      ],
      bad: [
        NAME_BAD,
        ['', 'a-b', NOT_UTF8],
        ['', 'x', '-1', '1.5', '1000', NOT_UTF8, d2],
        ['', 'x', '-1', '1.5'],
        ['', 'Skip', 'x'],
        ['', 'x', '1.5', NOT_UTF8],
        [
          '',
          Buffer.from([0x01]),
          Buffer.from('\x02\x00{}'),
          Buffer.from([0x01, 0x08, 0xff, 0xfb]), // a priority
          Buffer.from([0x01, 0x10, 0x01, 0x67, 0, 0, 0, 0, 0, 0]), // a group
          Buffer.from([0x01, 0x01, ...Buffer.alloc(20)]), // a claim block
          Buffer.from([0x01, 0x02, 0x00, 0x00]), // max attempts 0
          Buffer.from([0x01, 0x80, 0x08]), // a completed record
        ],
        ['', '0', '1', '3', 'x', '1001'],
        ['', 'x', '1000', String(mark)],
        ['', 'x', d1],
      ],
      // s p r gq gw gr, gc, gn, j, w (a channel), n, ev, schedules, last, schedule wake (a channel), config
      types: 'zzzzzzhzh-hxhz-h',
    };
  },

  'schedule-remove': async (ctx) => {
    await seedSchedule(ctx);
    const k = queueKeys(ctx.name);
    return {
      script: 'schedule-remove',
      keys: [k.schedules, k.schedulePayloads, k.scheduleLast, ...waiting(ctx.name), k.records, k.errors],
      args: ['tick'],
      names: [/ARGV\[1\] schedule name/],
      bad: [NAME_BAD],
      // schedules, payloads, last, s p r gq gw gr, gc, gn, j, e
      types: 'hhzzzzzzzhzhh',
    };
  },

  'schedule-read': async (ctx) => {
    await seedSchedule(ctx);
    const k = queueKeys(ctx.name);
    return {
      script: 'schedule-read',
      keys: [k.schedules, k.schedulePayloads, k.scheduleLast],
      args: ['due', '100'],
      names: [/ARGV\[1\] mode/, /ARGV\[2\] limit/],
      bad: [
        ['', 'Due', 'x', NOT_UTF8],
        ['', '0', '10001', 'x', '1.5', NOT_UTF8],
      ],
      extra: [
        {
          what: "'all' with a value more",
          args: ['all', '1'],
          expect: /ARGV has 2 values; schedule-read 'all' takes 1/,
        },
        {
          what: "'one' with a name no schedule can have",
          args: ['one', 'a b'],
          expect: /ARGV\[2\] schedule name/,
        },
      ],
    };
  },
};
