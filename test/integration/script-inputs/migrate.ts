/**
 * The migrate-*.lua scripts' specs for test/integration/script-inputs.test.ts, each on a queue
 * written the way delayq 0.1 wrote it (test/fixtures/layout1): a config record of format 1, a
 * waiting job `m1` and the repeating schedule `tick`.
 */
import { configKey, legacyKeys, queueKeys } from '../../../src/redis/keys.js';
import { Layout1Queue } from '../../fixtures/layout1/index.js';
import { serverNow } from '../../support/fixtures.js';
import { ID_BAD, NOT_UTF8, type SpecContext, type SpecFactory } from './spec.js';

async function seedLayout1(ctx: SpecContext): Promise<number> {
  const old = new Layout1Queue(ctx.raw, ctx.name);
  await old.record();
  await old.add('m1', { n: 1 }, { delayMs: 3_600_000 });
  const now = await serverNow(ctx.raw);
  await old.schedule('tick', 1_000, { n: 'tick' }, now + 3_600_000);
  return now;
}

/** The layout-1 keys that hold a job, in the order migrate-read, -write and -seal take them first. */
function legacyJobKeys(name: string): string[] {
  const o = legacyKeys(name);
  return [o.schedule, o.jobs, o.meta, o.active, o.leases, o.dead, o.errors, o.completed, o.done];
}

/** A definition in layout 2's form (src/schedule/definition.ts). */
const DEFINITION = JSON.stringify({
  v: 2,
  rev: 'abc123',
  spec: { every: 1000 },
  missed: 'skip',
  grace: 1000,
  m: 3,
  version: 1,
});

export const migrateSpecs: Record<string, SpecFactory> = {
  'migrate-begin': async (ctx) => {
    await seedLayout1(ctx);
    return {
      script: 'migrate-begin',
      keys: [configKey(ctx.name)],
      args: ['host:1', '0', 'zset', '1', 'json', '10000'],
      names: [
        /ARGV\[1\] who/,
        /ARGV\[2\] resume/,
        /ARGV\[3\] layout/,
        /ARGV\[4\] partitions/,
        /ARGV\[5\] codec/,
        /ARGV\[6\] events/,
      ],
      bad: [
        ['', 'a\nb', NOT_UTF8, 'x'.repeat(1025)],
        ['', '2', 'yes'],
        ['', 'list', 'wheel:', 'wheel:0'],
        ['', '0', '01', '1025', 'x'],
        ['', 'a\nb'],
        ['', 'x', '1.5', '--1'],
      ],
      extra: [
        {
          what: 'a value more',
          args: ['host:1', '0', 'zset', '1', 'json', '10000', 'x'],
          expect: /ARGV has 7 values/,
        },
      ],
      types: 'h',
    };
  },

  'migrate-end': async (ctx) => {
    await seedLayout1(ctx);
    await ctx.raw.hset(configKey(ctx.name), 'migrating', '1|host:1');
    const o = legacyKeys(ctx.name);
    return {
      script: 'migrate-end',
      keys: [configKey(ctx.name), o.layout, o.partitions],
      args: ['1|host:1'],
      names: [/ARGV\[1\] mark/],
      bad: [['', 'x', '|host', '1|', '1|\n', NOT_UTF8]],
      // config, the layout-1 layout and partitions STRINGs
      types: 'hss',
    };
  },

  'migrate-read': async (ctx) => {
    await seedLayout1(ctx);
    const c = queueKeys(ctx.name);
    return {
      script: 'migrate-read',
      keys: [...legacyJobKeys(ctx.name), c.cancelled, c.records],
      args: ['schedule', '0', '500'],
      names: [/ARGV\[1\] phase/, /ARGV\[2\] cursor/, /ARGV\[3\] chunk/],
      bad: [
        ['', 'x', 'Active', NOT_UTF8],
        ['', 'x', '-1', '1.5', NOT_UTF8],
        ['', '0', '10001', 'x'],
      ],
    };
  },

  'migrate-write': async (ctx) => {
    const now = await seedLayout1(ctx);
    const o = legacyKeys(ctx.name);
    const c = queueKeys(ctx.name);
    const meta = (await ctx.raw.hget(o.meta, 'm1'))!;
    const member = `1.${now}|m1`;
    return {
      script: 'migrate-write',
      keys: [
        ...legacyJobKeys(ctx.name),
        c.cancelled,
        c.records,
        c.waiting,
        c.leases,
        c.dead,
        c.completed,
        c.errors,
      ],
      args: ['1', 'm1', meta, '', Buffer.from('\x01\x00{"n":1}'), 's', String(now + 3_600_000), '', ''],
      names: [
        /ARGV\[1\] N|ARGV has/,
        /ARGV\[2\] id|ARGV has/,
        /ARGV has/,
        /ARGV has/,
        /ARGV\[5\] record|ARGV has/,
        /ARGV\[6\] target|ARGV has/,
        /ARGV\[7\] score|ARGV has/,
        /ARGV\[8\] member|ARGV has/,
        /ARGV\[9\] error|ARGV has/,
      ],
      bad: [
        ['', '0', 'x', '2'],
        ID_BAD,
        [],
        [],
        [Buffer.from('\x02\x00{}'), Buffer.from([0x01])],
        ['q', 'S', NOT_UTF8],
        ['', 'x', '-1', '1.5'],
        ['x', member],
        ['x', '[1]', '"text"'],
      ],
      extra: [
        {
          what: 'target a with a member of another id',
          args: ['1', 'm1', meta, '', Buffer.from('\x01\x00{}'), 'a', String(now), `1.${now}|m2`, ''],
          expect: /ARGV\[8\] member \(job 1 of 1\) .* is not a lease member of the id m1/,
        },
        {
          // The second job is bad: the first must not be written either.
          what: 'a good job, then a bad one',
          args: [
            '2',
            'm1',
            meta,
            '',
            Buffer.from('\x01\x00{}'),
            's',
            String(now),
            '',
            '',
            'm2',
            '',
            '',
            '',
            'q',
            '0',
            '',
            '',
          ],
          expect: /ARGV\[14\] target \(job 2 of 2\) q/,
        },
      ],
      // layout 1's schedule, jobs, meta, active, leases, dead, errors, completed, done; then x, j, s, a, d, c, e
      types: 'zhhzhzhzzzhzzzzh',
    };
  },

  'migrate-seal': async (ctx) => {
    await seedLayout1(ctx);
    const o = legacyKeys(ctx.name);
    const c = queueKeys(ctx.name);
    return {
      script: 'migrate-seal',
      keys: [
        ...legacyJobKeys(ctx.name),
        o.token,
        o.layout,
        o.events,
        c.events,
        c.waiting,
        c.wake,
        o.limiter,
        o.ready,
        o.wheel,
        o.wheelCount,
      ],
      args: [],
      names: [],
      bad: [],
      // The keys after these are wheel bucket lists.
      moreKeysValid: true,
      extra: [{ what: 'an argument', args: ['x'], expect: /ARGV has 1 values; migrate-seal takes 0/ }],
      // layout 1's job keys, token, layout, events; ev, s, w (a channel), limiter, ready, wheel, wheel count
      types: 'zhhzhzhzzssxxz-zlzs',
    };
  },

  'migrate-templates': async (ctx) => {
    await seedLayout1(ctx);
    const c = queueKeys(ctx.name);
    const oldDefinition = (await ctx.raw.hget(c.schedules, 'tick'))!;
    const oldTemplate = (await ctx.raw.hgetBuffer(c.schedulePayloads, 'tick'))!;
    return {
      script: 'migrate-templates',
      keys: [c.schedules, c.schedulePayloads],
      args: ['1', 'tick', oldDefinition, oldTemplate, DEFINITION, Buffer.from('{"n":"tick"}')],
      names: [
        /ARGV\[1\] N|ARGV has/,
        /ARGV\[2\] name|ARGV has/,
        /ARGV has/,
        /ARGV has/,
        /ARGV\[5\] new definition|ARGV has/,
        /ARGV has/,
      ],
      bad: [['', '0', 'x', '2'], ['', 'a b', NOT_UTF8], [], [], ['', 'x', '{"v":1}'], []],
      types: 'hh',
    };
  },
};
