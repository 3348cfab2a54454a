/**
 * Instructions redis-server executes per job, counted by valgrind's callgrind: a count that a busy
 * machine does not move, where Redis CPU time (INFO cpu) swings by 2x between runs on a shared
 * host. For before/after comparisons of a script change (claim.lua, add.lua), not as a figure of
 * speed: callgrind runs Redis ~50x slower and counts instructions, not cache misses.
 *
 * Fills a queue with --jobs immediate jobs (not counted), then counts the instructions of (a) the
 * adds (--phase=add: the same adds, counted) or (b) claiming them --limit per call with the
 * previous batch's acks riding each call, as claim-cost.ts does (--phase=claim, the default), or
 * (c) --jobs claims of one job from an empty queue (--phase=empty: the fixed cost of a call), or
 * (d) --jobs claims of --limit jobs from a queue of --jobs jobs none of which is due yet
 * (--phase=sparse: a claim at a due time with slots to spare, which finds few due jobs or none).
 * --phase=add also takes the bounds of one add call, `--bounds=<jobs>[x<bytes>]` (src/queue/add-calls.ts;
 * the first one given), and `--payload=<bytes>` to pad each job's payload to about that size; it
 * prints the instructions per call beside those per job.
 * Needs valgrind (apt-get install valgrind).
 *
 * Run: npm run bench:redis-instructions -- [--jobs=20000] [--limit=50] [--phase=claim|add|empty|sparse] [--groups=N]
 *      [--bounds=200x256k] [--payload=N]
 *      REDIS_ARGS="--zset-max-listpack-entries 0" passes extra redis-server arguments.
 */
import { execFileSync, spawn } from 'node:child_process';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { Queue } from '../src/index.js';
import { claim } from '../src/operations/claim.js';
import { queueKeys } from '../src/redis/keys.js';
import { freePort } from '../src/testing/redis-server.js';
import { setAddCallBounds } from '../src/queue/add-calls.js';
import { boundsFlag, boundsLabel, payloadFlag } from './lib/add-bounds.js';
import { busyClaimSettings, claimBusily } from './lib/busy-claims.js';
import { commandCalls } from './lib/redis.js';
import { countFlag } from './lib/flags.js';
import { runMain } from './lib/main.js';

const JOBS = countFlag('jobs', 20_000);
const LIMIT = countFlag('limit', 50);
/** Groups the filled jobs are spread over (0: none). */
const GROUPS = Number(process.argv.find((a) => a.startsWith('--groups='))?.slice('--groups='.length) ?? 0);
const PHASE = process.argv.find((a) => a.startsWith('--phase='))?.slice('--phase='.length) ?? 'claim';
const QUEUE = 'redis-instructions';
/** Each job's payload pad (the add phase's --payload; 60 bytes otherwise). */
const PAYLOAD = PHASE === 'add' && process.argv.some((a) => a.startsWith('--payload=')) ? payloadFlag() : 60;

const SETTINGS = busyClaimSettings(600_000);

async function main(): Promise<void> {
  if (!['claim', 'add', 'empty', 'sparse'].includes(PHASE))
    throw new Error('--phase must be claim, add, empty or sparse');
  const port = await freePort();
  const dir = join(tmpdir(), `redis-instructions-${process.pid}`);
  rmSync(dir, { recursive: true, force: true });
  execFileSync('mkdir', ['-p', dir]);
  const server = spawn(
    'valgrind',
    [
      '--tool=callgrind',
      // Names written out in every dump: compressed, the phase's dump would refer to names that
      // only the final dump (never written: the server is killed) defines.
      '--compress-strings=no',
      `--callgrind-out-file=${join(dir, 'callgrind.out.%p')}`,
      'redis-server',
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      // Work Redis does by the clock (serverCron, incremental rehashing) would be counted by how
      // long the phase took under valgrind: kept to a minimum, so the count is the commands' own.
      '--hz',
      '1',
      '--dynamic-hz',
      'no',
      '--activerehashing',
      'no',
      ...(process.env.REDIS_ARGS ? process.env.REDIS_ARGS.split(' ') : []),
    ],
    { stdio: 'ignore' },
  );
  const client = new Redis({ port, host: '127.0.0.1', lazyConnect: true, retryStrategy: () => 200 });
  try {
    for (let i = 0; ; i++) {
      try {
        await client.connect();
        await client.ping();
        break;
      } catch {
        if (i > 150) throw new Error('redis-server under valgrind did not start');
        client.disconnect();
        await new Promise((r) => setTimeout(r, 200));
      }
    }
    if (PHASE === 'add') setAddCallBounds(boundsFlag()[0]!);
    const queue = new Queue<{ i: number; pad: string }>(QUEUE, {
      connection: `redis://127.0.0.1:${port}`,
      maxPayloadBytes: Math.max(1024 * 1024, 2 * PAYLOAD),
    });
    const pad = 'x'.repeat(PAYLOAD);
    const fill = async () => {
      for (let i = 0; i < JOBS; i += 1_000) {
        const n = Math.min(1_000, JOBS - i);
        // sparse: due in a day, so no claim of the phase finds them due; --groups=N: in N groups.
        const opts = (k: number) => ({
          ...(PHASE === 'sparse' ? { delay: 86_400_000 } : {}),
          ...(GROUPS > 0 ? { group: `g${(i + k) % GROUPS}` } : {}),
        });
        await queue
          .addBulk(Array.from({ length: n }, (_, k) => ({ payload: { i: i + k, pad }, opts: opts(k) })))
          // BISECT=1: a script cut short for a measurement answers what the wrapper cannot parse.
          .catch((err: unknown) => {
            if (!process.env.BISECT) throw err;
          });
      }
    };
    // The first add loads the function library: never counted.
    await queue.addBulk([{ payload: { i: -1, pad } }]).catch((err: unknown) => {
      if (!process.env.BISECT) throw err;
    });
    // Counters zeroed as the phase begins and dumped as it ends: the dump holds the phase alone.
    const control = (flag: string) =>
      execFileSync('callgrind_control', [flag, String(server.pid)], { stdio: 'ignore' });
    const instrument = (on: boolean) => control(on ? '--zero' : '--dump');
    const scriptCalls = async () => (await commandCalls(client)).get('fcall') ?? 0;
    const calls0 = PHASE === 'add' ? await scriptCalls() : 0;
    if (PHASE === 'add') instrument(true);
    await fill();
    if (PHASE === 'add') instrument(false);
    const addCalls = PHASE === 'add' ? (await scriptCalls()) - calls0 : 0;
    await queue.close();
    if (PHASE === 'empty') {
      // A claim that finds nothing to do: what every call costs before any job.
      const keys = queueKeys(`${QUEUE}-empty`);
      instrument(true);
      for (let i = 0; i < JOBS; i++) {
        // BISECT=1: a script cut short for a measurement answers what the wrapper cannot parse.
        await claim(client, keys, { ...SETTINGS, limit: 1, acks: [] }).catch((err: unknown) => {
          if (!process.env.BISECT) throw err;
        });
      }
      instrument(false);
    }
    if (PHASE === 'sparse') {
      const keys = queueKeys(QUEUE);
      // The immediate job of the first add is due: taken (and held) before the count starts.
      await claim(client, keys, { ...SETTINGS, limit: 1, acks: [] });
      instrument(true);
      for (let i = 0; i < JOBS; i++) await claim(client, keys, { ...SETTINGS, limit: LIMIT, acks: [] });
      instrument(false);
    }
    if (PHASE === 'claim') {
      const keys = queueKeys(QUEUE);
      instrument(true);
      await claimBusily(client, keys, SETTINGS, JOBS + 1, LIMIT);
      instrument(false);
    }
    // The phase's dump is the first one (callgrind.out.<pid>.1); the final one at exit is not read.
    const dump = readdirSync(dir).find((f) => /^callgrind\.out\.\d+\.1$/.test(f));
    if (!dump) throw new Error(`no callgrind dump in ${dir}`);
    const summary = /^(?:summary|totals): (\d+)/m.exec(readFileSync(join(dir, dump), 'utf8'));
    const total = Number(summary?.[1] ?? NaN);
    const jobs = PHASE === 'claim' ? JOBS + 1 : JOBS;
    const perCall = PHASE === 'empty' || PHASE === 'sparse';
    const what =
      PHASE === 'empty'
        ? `${JOBS} claims finding nothing`
        : PHASE === 'sparse'
          ? `${JOBS} claims of ${LIMIT} finding nothing due among ${JOBS} waiting`
          : `${jobs} jobs${PHASE === 'claim' ? `, ${LIMIT} per call` : ''}`;
    const calls =
      PHASE === 'add'
        ? ` [${boundsLabel(boundsFlag()[0]!)}, payload pad ${PAYLOAD} B]: ${addCalls} calls, ${(total / Math.max(1, addCalls)).toFixed(0)} instructions per call`
        : '';
    console.log(
      `redis-instructions ${PHASE}: ${what}: ${(total / jobs).toFixed(0)} instructions per ${perCall ? 'call' : 'job'}${calls}`,
    );
  } finally {
    client.disconnect();
    server.kill('SIGKILL');
    // KEEP=1 leaves the callgrind files (for callgrind_annotate; Debian's redis-server is stripped:
    // put a redis-server built from source first in PATH for names).
    if (!process.env.KEEP) rmSync(dir, { recursive: true, force: true });
  }
}

runMain(main);
