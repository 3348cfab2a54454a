/**
 * Redis's own ceiling on this machine: redis-benchmark for ZADD and a trivial EVAL, without and
 * with pipelining, 50 clients, against the same kind of private server the queues use.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { Context } from '../lib/context.js';
import { reset } from '../lib/redis.js';

const run = promisify(execFile);

/** Requests per second from one redis-benchmark run (its --csv output). */
async function benchmark(ctx: Context, pipeline: number, command: string[]): Promise<number> {
  const { port } = ctx.redis.server;
  const { requests } = ctx.profile.ceiling;
  const args = [
    '-h',
    '127.0.0.1',
    '-p',
    String(port),
    '-n',
    String(requests),
    '-c',
    '50',
    '-P',
    String(pipeline),
    '--csv',
  ];
  const { stdout } = await run('redis-benchmark', [...args, ...command], { timeout: 120_000 });
  // "test","rps",...  then one line per test: "NAME","12345.67",...
  const row = stdout
    .trim()
    .split('\n')
    .find((line) => !line.startsWith('"test"'));
  const rps = Number(row?.split(',')[1]?.replace(/"/g, ''));
  if (!Number.isFinite(rps)) throw new Error(`cannot read redis-benchmark output: ${stdout}`);
  return rps;
}

/** Run the ceilings (once: redis-benchmark already averages over many requests). */
export async function runCeiling(ctx: Context): Promise<void> {
  const cases: Array<{ name: string; command: string[] }> = [
    { name: 'ZADD', command: ['-r', '100000', 'ZADD', 'ceiling', '__rand_int__', 'member:__rand_int__'] },
    { name: 'EVAL "return 1"', command: ['EVAL', 'return 1', '0'] },
  ];
  const commandLines: string[] = [];
  for (const { name, command } of cases) {
    for (const pipeline of [1, ctx.profile.ceiling.pipeline]) {
      await reset(ctx.redis.control);
      const rps = await benchmark(ctx, pipeline, command);
      const metric = `${name}, ${pipeline === 1 ? 'no pipelining' : `pipeline ${pipeline}`}`;
      ctx.rec.ceilings.push({ name: metric, opsPerSec: rps });
      commandLines.push(
        `redis-benchmark -n ${ctx.profile.ceiling.requests} -c 50 -P ${pipeline} ${command.map((c) => (c.includes(' ') ? `'${c}'` : c)).join(' ')}`,
      );
      ctx.log(`  ceiling ${metric}: ${Math.round(rps)} ops/s`);
    }
  }
  ctx.rec.details['ceiling commands'] = commandLines;
}
