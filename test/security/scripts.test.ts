/**
 * The set of scripts the package can send is fixed (issue 8, item 4): the files in src/scripts,
 * listed in docs/SECURITY.md for operators to review. Checked three ways: the files against the
 * list; the sources (no Lua built in TypeScript, EVAL sent from one place only); and the wire
 * (MONITOR while a producer and a worker run, with SCRIPT FLUSH forcing the EVAL fallback): every
 * EVALSHA names a shipped script and every EVAL carries a shipped script's exact text.
 */
import { once } from 'node:events';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { describe, expect, test } from 'vitest';
import { Queue, Worker } from '../../src/index.js';
import { functionLibrary, script, setScriptTransport } from '../../src/redis/scripts.js';
import { uniqueQueue, useRedis, waitFor } from '../support/fixtures.js';

const redis = useRedis();
const root = fileURLToPath(new URL('../../', import.meta.url));
const scriptsDir = join(root, 'src/scripts');

const shipped = readdirSync(scriptsDir)
  .filter((f) => f.endsWith('.lua'))
  .map((f) => f.slice(0, -'.lua'.length))
  .sort();

/** Undo MONITOR's quoting of an argument (sdscatrepr: \\n, \\", \\xHH for other bytes). */
function unrepr(arg: string): string {
  const bytes: number[] = [];
  const simple: Record<string, number> = { n: 10, r: 13, t: 9, a: 7, b: 8, '"': 34, '\\': 92 };
  for (let i = 0; i < arg.length; i++) {
    const ch = arg[i]!;
    if (ch !== '\\') {
      bytes.push(...Buffer.from(ch));
      continue;
    }
    const next = arg[i + 1]!;
    if (next === 'x') {
      bytes.push(parseInt(arg.slice(i + 2, i + 4), 16));
      i += 3;
    } else {
      bytes.push(simple[next] ?? next.charCodeAt(0));
      i += 1;
    }
  }
  return Buffer.from(bytes).toString();
}

function filesUnder(dir: string, ext: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return filesUnder(path, ext);
    return path.endsWith(ext) && !path.endsWith(`.test${ext}`) ? [path] : [];
  });
}

describe('the scripts delayq can send', () => {
  test('are exactly the files listed in docs/SECURITY.md', () => {
    const doc = readFileSync(join(root, 'docs/SECURITY.md'), 'utf8');
    const section = /## The scripts are fixed\n([\s\S]*?)\n## /.exec(doc)?.[1] ?? '';
    const listed = [...section.matchAll(/`([a-z-]+)`/g)].map((m) => m[1]!).sort();
    expect(shipped, 'src/scripts/*.lua vs the list in docs/SECURITY.md').toEqual(listed);
  });

  test('are never built at run time: no Lua in TypeScript, EVAL and EVALSHA sent from scripts.ts only', () => {
    const offenders: string[] = [];
    for (const file of filesUnder(join(root, 'src'), '.ts')) {
      const rel = relative(root, file);
      const text = readFileSync(file, 'utf8');
      if (/redis\.p?call\s*\(/.test(text)) offenders.push(`${rel}: Lua source in TypeScript`);
      if (
        rel !== join('src', 'redis', 'scripts.ts') &&
        /['"](EVAL|EVALSHA|SCRIPT)['"]|\.eval(sha)?\(|defineCommand\(/.test(text)
      ) {
        offenders.push(`${rel}: sends scripts itself`);
      }
      for (const m of text.matchAll(/\bscript\(\s*(['"])([^'"]+)\1\s*\)/g)) {
        if (!shipped.includes(m[2]!)) offenders.push(`${rel}: script('${m[2]}') is not a shipped script`);
      }
    }
    expect(offenders).toEqual([]);
  });

  /**
   * What delayq sends (MONITOR) while a producer and a worker run jobs, with `flush` (SCRIPT or
   * FUNCTION) sent midway so the next calls must send script text or load the library again.
   */
  async function wire(
    flush: 'SCRIPT' | 'FUNCTION',
  ): Promise<Array<{ command: string; first: string; second: string }>> {
    // A monitoring client of its own, not `new Redis(url).monitor()`: that leaves a second client
    // whose ready check (INFO) can reach the server just after MONITOR, and ioredis enters its
    // monitoring state a microtask after MONITOR's reply, so a feed line read in the same chunk is
    // taken for a reply ("Command queue state error"; CI failed so once).
    const monitor = new Redis(redis.url(), { monitor: true });
    monitor.on('error', () => {});
    await once(monitor, 'monitoring');
    const sent: Array<{ command: string; first: string; second: string }> = [];
    monitor.on('monitor', (_time: string, args: string[], source: string) => {
      const command = (args[0] ?? '').toLowerCase();
      if (
        !source.includes('lua') &&
        ['eval', 'evalsha', 'script', 'fcall', 'fcall_ro', 'function'].includes(command)
      ) {
        sent.push({ command, first: unrepr(args[1] ?? ''), second: unrepr(args[2] ?? '') });
      }
    });
    const admin = new Redis(redis.url());
    const name = uniqueQueue('wire');
    const queue = new Queue<{ fail?: boolean }>(name, { connection: redis.url() });
    const done: string[] = [];
    const worker = new Worker<{ fail?: boolean }>(
      name,
      async (job) => {
        if (job.payload.fail) throw new Error('fails');
        await job.extendLease(5_000);
      },
      { connection: redis.url(), backoff: { type: 'fixed', delay: 10 } },
    );
    worker.on('completed', (job) => done.push(job.id));
    worker.on('dead', (_job, _err, id) => done.push(id));
    try {
      await worker.waitUntilReady();
      await queue.add({}, { id: 'one' });
      await waitFor(() => done.includes('one'), { what: 'the first job' });
      // Forget every script (or the library): the next calls meet NOSCRIPT and send the text (or
      // meet "Function not found" and load the library).
      await admin.call(flush, 'FLUSH');
      await queue.addBulk([
        { payload: {}, opts: { id: 'two' } },
        { payload: { fail: true }, opts: { id: 'three', attempts: 2 } },
      ]);
      await waitFor(() => done.includes('two') && done.includes('three'), { what: 'the other jobs' });
      await queue.get('three');
      await queue.counts();
      await queue.dead.retry('three');
      await queue.cancel('three');
    } finally {
      await worker.close();
      await queue.close();
      await admin.quit();
      monitor.disconnect();
    }

    return sent;
  }

  test('on the wire, where FCALL runs them: every FCALL names a library function, every FUNCTION LOAD carries the library verbatim', async () => {
    const sent = await wire('FUNCTION');
    const functions = new Set(functionLibrary().functions.values());
    const fcalls = sent.filter((s) => s.command === 'fcall');
    const loads = sent.filter((s) => s.command === 'function' && s.first.toUpperCase() === 'LOAD');
    expect(loads.length, 'the flush made delayq load the library again').toBeGreaterThanOrEqual(2);
    expect(fcalls.length).toBeGreaterThan(loads.length);
    expect(fcalls.filter((s) => !functions.has(s.first)).map((s) => s.first)).toEqual([]);
    expect(
      loads.filter((s) => s.second !== functionLibrary().source).map((s) => s.second.slice(0, 80)),
    ).toEqual([]);
    // Nothing else: no FCALL_RO, no other FUNCTION subcommand (the FLUSH was ours), no EVAL.
    const others = sent.filter((s) => !fcalls.includes(s) && !loads.includes(s));
    expect(others.map((s) => `${s.command} ${s.first}`)).toEqual(['function FLUSH']);
  });

  test('on the wire, by EVALSHA: every EVALSHA names a shipped script, every EVAL carries one verbatim', async () => {
    const bySha = new Map(shipped.map((n) => [script(n).sha, n]));
    const bySource = new Map(shipped.map((n) => [script(n).source, n]));
    // As on a server without functions.
    setScriptTransport('eval');
    const sent = await wire('SCRIPT').finally(() => setScriptTransport('auto'));
    const evals = sent.filter((s) => s.command === 'eval');
    const evalshas = sent.filter((s) => s.command === 'evalsha');
    expect(evals.length, 'the flush made delayq send script text').toBeGreaterThan(0);
    expect(evalshas.length).toBeGreaterThan(evals.length);
    expect(evalshas.filter((s) => !bySha.has(s.first)).map((s) => s.first)).toEqual([]);
    expect(evals.filter((s) => !bySource.has(s.first)).map((s) => s.first.slice(0, 80))).toEqual([]);
    // No SCRIPT LOAD or other SCRIPT command from delayq (the FLUSH was ours).
    expect(sent.filter((s) => s.command === 'script' && s.first.toUpperCase() !== 'FLUSH')).toEqual([]);
  });
});
