/**
 * What the claim script's fixed cost per call would be as a Redis 7 function (FUNCTION LOAD +
 * FCALL) instead of EVALSHA: an EVAL script runs its whole text at every call, so every helper
 * its includes define is made again each time; a function library runs its top level once, at
 * load. Both run claim.lua's includes and return TIME, with claim's 20 keys and 13 ARGV, on a
 * private redis-server; µs per call from INFO commandstats. A probe for a design choice, not a
 * workload: delayq runs its scripts as such a library where the server has functions
 * (src/redis/function-library.ts, docs/ARCHITECTURE.md §4.12); bench/claim-cost.ts measures
 * the real claim both ways.
 *
 * Run: node --import tsx bench/function-vs-eval.ts
 */
import { fileURLToPath } from 'node:url';
import { loadavg } from 'node:os';
import { expandLua } from '../src/redis/lua-source.js';
import { reset, startBenchRedis } from './lib/redis.js';
import { runMain } from './lib/main.js';

const CALLS = 20_000;
const ROUNDS = 3;

async function main(): Promise<void> {
  const redis = await startBenchRedis();
  const { control } = redis;
  try {
    const claim = expandLua(fileURLToPath(new URL('../src/scripts/', import.meta.url)), 'claim.lua');
    // Functions are always effect-replicated and have no replicate_commands.
    const includes = claim
      .slice(0, claim.indexOf('local c, problem = claim_context()'))
      .replace('if redis.replicate_commands then redis.replicate_commands() end', '');
    const keys = Array.from({ length: 20 }, (_, i) => `dq:{q}:k${i}`);
    const args = ['1', '15000', '1', '1', '0', '0', '0', '0', '1000', '86400000', 'zm', '-10000', '0'];
    await reset(control);
    const sha = (await control.script('LOAD', `${includes}\nreturn now_ms()`)) as string;
    await control.call(
      'FUNCTION',
      'LOAD',
      'REPLACE',
      `#!lua name=dqprobe\n${includes}\nredis.register_function('probe', function(keys, args) return now_ms() end)`,
    );
    const perCall = async (command: string): Promise<number> => {
      const m = new RegExp(`cmdstat_${command}:calls=(\\d+),usec=(\\d+)`).exec(
        await control.info('commandstats'),
      );
      return Number(m?.[2]) / Number(m?.[1]);
    };
    console.log(`${CALLS} calls each, ${ROUNDS} rounds; load average ${loadavg()[0]!.toFixed(2)}`);
    for (let round = 1; round <= ROUNDS; round++) {
      await control.config('RESETSTAT');
      for (let i = 0; i < CALLS; i++) await control.evalsha(sha, keys.length, ...keys, ...args);
      const evalsha = await perCall('evalsha');
      await control.config('RESETSTAT');
      for (let i = 0; i < CALLS; i++) await control.call('FCALL', 'probe', keys.length, ...keys, ...args);
      const fcall = await perCall('fcall');
      console.log(
        `round ${round}: EVALSHA ${evalsha.toFixed(2)} µs per call, FCALL ${fcall.toFixed(2)} µs per call (claim.lua's includes, then TIME)`,
      );
    }
  } finally {
    await redis.stop();
  }
}

runMain(main);
