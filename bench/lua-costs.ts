/**
 * What the steps a job's scripts take cost Redis, each run 20,000 times inside one EVAL on a private
 * redis-server and timed by INFO cpu (user + sys), so the round trip and the client do not count.
 * It explains bench:redis-profile's "script calls' own time": a redis.call costs more than the
 * command's own usec in commandstats, and cjson and number-to-string conversions are not free.
 *
 * Run: node --import tsx bench/lua-costs.ts
 */
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { expandLua } from '../src/redis/lua-source.js';
import { cpuMicros, reset, startBenchRedis } from './lib/redis.js';
import { runMain } from './lib/main.js';

const N = 20_000;

/** Each step as the body of a Lua loop over i = 1..N. */
const STEPS: Array<[string, string]> = [
  ['empty loop', ''],
  [
    'cjson decode + encode of a meta entry (claim, per job)',
    'local m = cjson.decode(\'{"m":3,"a":0,"r":1796040423737}\'); m.a = m.a + 1; local s = cjson.encode(m)',
  ],
  ['redis.call HGET, field missing (lease check)', "redis.call('HGET', 'h', 'f' .. i)"],
  ['redis.call HSET, small value', "redis.call('HSET', 'h2', 'f' .. i, 'v')"],
  ['redis.call HDEL, field missing', "redis.call('HDEL', 'h3', 'f' .. i)"],
  [
    'redis.call XADD MAXLEN ~ 10000, a claimed event',
    "redis.call('XADD', 's', 'MAXLEN', '~', 10000, '*', 'type', 'claimed', 'id', '06flp15trFtOM9vXlIkVgu', 'attempt', 1, 'runAt', 1796040423737, 'at', 1796040423737, 'worker', 'host:1234:abcdef')",
  ],
  [
    'token and lease strings (number to string, concatenation)',
    "local t = i .. '.' .. 1796040423737; local l = t .. '|' .. 1796040423737 .. '|' .. 'host:1234:abcdef'",
  ],
];

/** Steps of the layout-2 hot path, run with the record and events helpers the scripts include. */
const RECORD_STEPS: Array<[string, string]> = [
  ['rec_parse of a new job (2-byte header, 40-byte payload)', 'local h = rec_parse(rec)'],
  [
    'rec_claimed (the claim block written into that record)',
    'local x = rec_claimed(rec, h0, 1, 1, 1796040423737, 1796040423737, 7)',
  ],
  ["lease token by string.format('%d.%.0f')", "local t = string.format('%d.%.0f', 3, 1796040423737)"],
  ["lease token by concatenation with '.<now>' formatted once", 'local t = 3 .. tail'],
  ['member_id of a lease member', 'local x = member_id(member)'],
  [
    'emit of a routine event with events off (the default)',
    "emit(K, 'claimed', 'abcdefghijklmn', 'attempt', 1, 'at', 1796040423737)",
  ],
];

const scriptsDir = fileURLToPath(new URL('../src/scripts/', import.meta.url));
const RECORD_PRELUDE = [
  ...['prelude.lua', 'events.lua', 'record.lua'].map((file) => expandLua(scriptsDir, `includes/${file}`)),
  'local K = { events_cap = -10000 }',
  "local rec = '\\1\\0' .. string.rep('x', 40)",
  'local h0 = rec_parse(rec)',
  "local tail = string.format('.%.0f', 1796040423737)",
  "local member = '3.1796040423737|abcdefghijklmn'",
].join('\n');

async function main(): Promise<void> {
  const redis = await startBenchRedis();
  try {
    await reset(redis.control);
    console.log(`${N} iterations per step; load average ${loadavg()[0]!.toFixed(2)}\n`);
    console.log('| step | µs per iteration |\n| --- | ---: |');
    for (const [name, body] of STEPS) {
      const before = await cpuMicros(redis.control);
      await redis.control.eval(`for i = 1, ${N} do ${body} end`, 0);
      const after = await cpuMicros(redis.control);
      console.log(`| ${name} | ${((after - before) / N).toFixed(2)} |`);
    }
    // The empty loop with the includes, taken off each record step.
    const loop = async (body: string): Promise<number> => {
      const before = await cpuMicros(redis.control);
      await redis.control.eval(`${RECORD_PRELUDE}\nfor i = 1, ${N} do ${body} end`, 0);
      return ((await cpuMicros(redis.control)) - before) / N;
    };
    const empty = await loop('');
    for (const [name, body] of RECORD_STEPS) {
      console.log(`| ${name} | ${((await loop(body)) - empty).toFixed(2)} |`);
    }
  } finally {
    await redis.stop();
  }
}

runMain(main);
