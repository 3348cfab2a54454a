import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { Queue, Worker } from '../../src/index.js';
import { queueKeys } from '../../src/redis/keys.js';
import { claim } from '../../src/operations/claim.js';
import { registerHolder } from '../../src/operations/worker-register.js';
import { ZSET_LAYOUT } from '../../src/operations/wheel.js';
import { freePort } from '../support/redis-server.js';
import { inspector, serverNow, uniqueQueue, useRedis, waitFor } from '../support/fixtures.js';
import { buildOnce, runCli, runCliOnTty, startCli } from './run-cli.js';

const redis = useRedis();
let dir: string;
const open: Array<{ close(): Promise<void> }> = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'delayq-cli-'));
  await buildOnce();
}, 120_000);
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});
afterEach(async () => {
  await Promise.all(open.splice(0).map((o) => o.close()));
});

function newQueue(name: string): Queue {
  const queue = new Queue(name, { connection: redis.url() });
  open.push(queue);
  return queue;
}

/** Put `ids` in the dead set of `name` by running a worker whose handler always throws. */
async function makeDead(name: string, ids: string[]): Promise<void> {
  const queue = newQueue(name);
  await queue.addBulk(ids.map((id) => ({ payload: { id }, opts: { id, attempts: 1 } })));
  const worker = new Worker(
    name,
    async () => {
      throw new Error('broken on purpose');
    },
    { connection: redis.url(), concurrency: 20 },
  );
  worker.on('error', () => {});
  await waitFor(async () => (await queue.counts()).dead === ids.length, { what: `${ids.length} dead jobs` });
  await worker.close();
}

const cli = (args: string[]) => runCli(args, { redisUrl: redis.url() });
const json = (text: string): unknown => JSON.parse(text.trim().split('\n').at(-1)!);

// Every test spawns the CLI several times; on a loaded two-core machine that can take seconds each.
vi.setConfig({ testTimeout: 60_000 });

describe('delayq add / show / ls / stats', () => {
  it('adds a delayed job and shows it in text and --json', async () => {
    const q = uniqueQueue('cli');
    const added = await cli([
      'add',
      q,
      '{"to":"a@b.c","n":1}',
      '--delay',
      '1h',
      '--id',
      'w1',
      '--attempts',
      '4',
    ]);
    expect(added.code).toBe(0);
    expect(added.stdout).toMatch(/^added w1 {2}due \d{4}-\d\d-\d\dT.* \(in 1\.0 h\)\n$/);
    expect(added.stdout).not.toContain('\u001b[');

    const r = inspector(redis.url());
    const now = await serverNow(r);
    const score = Number(await r.zscore(queueKeys(q).waiting, 'w1'));
    await r.quit();
    expect(score - now).toBeGreaterThan(3_590_000);
    expect(score - now).toBeLessThanOrEqual(3_600_000);

    const shown = await cli(['--json', 'show', q, 'w1']);
    expect(shown.code).toBe(0);
    expect(json(shown.stdout)).toMatchObject({
      id: 'w1',
      state: 'scheduled',
      payload: { to: 'a@b.c', n: 1 },
      attempts: 0,
      maxAttempts: 4,
      runAt: new Date(score).toISOString(),
    });
    const text = await cli(['show', q, 'w1']);
    expect(text.stdout).toContain('state     scheduled');
    expect(text.stdout).toContain('"to": "a@b.c"');

    const again = await cli(['--json', 'add', q, '{"other":true}', '--id', 'w1']);
    expect(json(again.stdout)).toMatchObject({
      id: 'w1',
      created: false,
      runAt: new Date(score).toISOString(),
    });

    const listed = await cli(['--json', 'ls', q, '--state', 'scheduled']);
    expect(json(listed.stdout)).toMatchObject({ total: 1, jobs: [{ id: 'w1', state: 'scheduled' }] });

    const stats = await cli(['--json', 'stats', q]);
    expect(stats.code).toBe(0);
    expect(json(stats.stdout)).toMatchObject({
      queue: q,
      counts: { scheduled: 1, due: 0, active: 0, dead: 0, completed: 0, cancelled: 0, waitingChildren: 0 },
      nextDue: score,
      strategy: expect.stringMatching(/^(zpopmin|range)$/) as unknown,
    });
    const all = await cli(['--json', 'stats']);
    const row = (json(all.stdout) as { queues: Array<{ name: string; scheduled: number }> }).queues.find(
      (x) => x.name === q,
    );
    expect(row).toMatchObject({ name: q, scheduled: 1, dead: 0 });
    const allText = await cli(['stats']);
    // Every queue's row shows scheduled, due, held, active, dead, completed, cancelled and
    // waiting-children, its strategy and lateness ('-': nothing claimed in the last minute) too.
    expect(allText.stdout).toMatch(
      /^queue +scheduled +due +held +active +dead +completed +cancelled +waiting-children /m,
    );
    expect(allText.stdout).toMatch(
      new RegExp(`^${q} +1 +0 +0 +0 +0 +0 +0 +0 +in (59 min \\d+ s|1\\.0 h) +(zpopmin|range) +-$`, 'm'),
    );
  });

  it('lists pages with --limit and --offset', async () => {
    const q = uniqueQueue('cli');
    const queue = newQueue(q);
    await queue.addBulk(
      Array.from({ length: 5 }, (_, i) => ({ payload: i, opts: { id: `j${i}`, delay: 60_000 + i * 1000 } })),
    );
    const page = await cli(['--json', 'ls', q, '--limit', '2', '--offset', '2']);
    expect(json(page.stdout)).toMatchObject({ total: 5, offset: 2, jobs: [{ id: 'j2' }, { id: 'j3' }] });
    const text = await cli(['ls', q, '--limit', '2']);
    expect(text.stdout.split('\n')[0]).toMatch(/^id +due +group\/priority +attempts +payload$/);
    expect(text.stdout).toContain('1-2 of 5 scheduled');
  });

  it('shows a grouped job’s group where others show their priority, in ls and show', async () => {
    const q = uniqueQueue('cli');
    const queue = newQueue(q);
    await queue.add({ n: 1 }, { id: 'g1', group: 'tenant-42', delay: '1h' });
    await queue.add({ n: 2 }, { id: 'p1', priority: 3, delay: '2h' });
    const list = await cli(['ls', q]);
    expect(list.stdout).toMatch(/^g1 +in .+ +tenant-42 +0\/\d+ /m);
    expect(list.stdout).toMatch(/^p1 +in .+ +3 +0\/\d+ /m);
    const show = await cli(['show', q, 'g1']);
    expect(show.stdout).toMatch(/^group +tenant-42$/m);
    expect(show.stdout).not.toMatch(/^priority/m);
  });
});

describe('delayq pause / resume', () => {
  it('pauses and resumes a queue, and stats says so; an unknown queue is an error', async () => {
    const q = uniqueQueue('cli');
    const queue = newQueue(q);
    await queue.add({ n: 1 }, { delay: '1h' });
    const paused = await cli(['--json', 'pause', q]);
    expect(paused.code).toBe(0);
    expect(json(paused.stdout)).toEqual({ queue: q, paused: true });
    expect(await queue.isPaused()).toBe(true);
    expect(json((await cli(['--json', 'stats', q])).stdout)).toMatchObject({ queue: q, paused: true });
    expect((await cli(['stats', q])).stdout).toMatch(/^paused +yes/m);
    expect((await cli(['stats'])).stdout).toMatch(new RegExp(`^${q} \\(paused\\) +1 +0 +0 +0 `, 'm'));

    const resumed = await cli(['resume', q]);
    expect(resumed.code).toBe(0);
    expect(resumed.stdout).toContain(`resumed ${q}`);
    expect(await queue.isPaused()).toBe(false);
    expect(json((await cli(['--json', 'stats', q])).stdout)).toMatchObject({ paused: false });

    const unknown = await cli(['pause', uniqueQueue('nothing')]);
    expect(unknown.code).toBe(1);
  });
});

describe('delayq on a partitioned queue', () => {
  it('stats sums and ls merges the partitions; the queue is listed once', async () => {
    const q = uniqueQueue('cli');
    const queue = new Queue<number>(q, { connection: redis.url(), partitions: 4 });
    try {
      await queue.addBulk(
        Array.from({ length: 12 }, (_, i) => ({
          payload: i,
          opts: { id: `p${i}`, delay: 60_000 + i * 1000 },
        })),
      );
    } finally {
      await queue.close();
    }
    const stats = await cli(['--json', 'stats', q]);
    expect(json(stats.stdout)).toMatchObject({
      queue: q,
      counts: { scheduled: 12, due: 0, active: 0, dead: 0 },
    });
    const all = json((await cli(['--json', 'stats'])).stdout) as {
      queues: Array<{ name: string; scheduled: number }>;
    };
    expect(all.queues.filter((x) => x.name.startsWith(q))).toEqual([
      expect.objectContaining({ name: q, scheduled: 12 }),
    ]);
    const page = await cli(['--json', 'ls', q, '--limit', '3', '--offset', '4']);
    expect(json(page.stdout)).toMatchObject({ total: 12, jobs: [{ id: 'p4' }, { id: 'p5' }, { id: 'p6' }] });
    expect(json((await cli(['--json', 'show', q, 'p7'])).stdout)).toMatchObject({
      id: 'p7',
      state: 'scheduled',
    });
  });
});

describe('delayq cancel / reschedule / retry / remove', () => {
  it('reschedules and cancels a waiting job, and refuses when it is not waiting', async () => {
    const q = uniqueQueue('cli');
    await newQueue(q).add('x', { id: 'a', delay: '1h' });
    const moved = await cli(['--json', 'reschedule', q, 'a', '--delay', '2h']);
    expect(moved.code).toBe(0);
    const r = inspector(redis.url());
    const now = await serverNow(r);
    expect(Number(await r.zscore(queueKeys(q).waiting, 'a')) - now).toBeGreaterThan(7_190_000);
    expect((await cli(['cancel', q, 'a'])).stdout).toBe('cancelled a\n');
    expect(await r.zscore(queueKeys(q).waiting, 'a')).toBeNull();
    // The cancelled record (3 bytes, no payload) stays while the cancelled set keeps the id.
    expect(await r.hgetBuffer(queueKeys(q).records, 'a')).toEqual(Buffer.from([0x01, 0x80, 0x10]));
    expect(await r.zscore(queueKeys(q).cancelled, 'a')).not.toBeNull();
    const listed = await cli(['--json', 'ls', q, '--state', 'cancelled']);
    expect(json(listed.stdout)).toMatchObject({ total: 1, jobs: [{ id: 'a', state: 'cancelled' }] });
    await r.quit();
    const twice = await cli(['cancel', q, 'a']);
    expect(twice.code).toBe(1);
    expect(twice.stderr).toBe(
      `delayq: job 'a' is neither waiting nor running in '${q}' (unknown, finished, cancelled or dead); nothing changed\n`,
    );
    expect((await cli(['reschedule', q, 'a', '--delay', '1s'])).code).toBe(1);
    expect((await cli(['reschedule', q, 'a'])).code).toBe(2);
  });

  it('cancels a running job: its lease goes, and show says cancelled', async () => {
    const q = uniqueQueue('cli');
    const r = inspector(redis.url());
    await newQueue(q).add('x', { id: 'busy' });
    // A holder: the job is claimed (a lease in active), as a worker would hold it.
    const [held] = (
      await claim(r, queueKeys(q), {
        strategy: 'zpopmin',
        limit: 1,
        leaseMs: 60_000,
        holder: await registerHolder(r, queueKeys(q), 'holder'),
        deadMaxCount: 100,
        deadMaxAgeMs: 0,
        rate: { max: 0, perMs: 0 },
        eventsCap: 100,
        zmscore: true,
        layout: ZSET_LAYOUT,
      })
    ).jobs;
    expect(held?.id).toBe('busy');
    const done = await cli(['--json', 'cancel', q, 'busy']);
    expect(done.code).toBe(0);
    expect(json(done.stdout)).toEqual({ queue: q, id: 'busy', cancelled: true });
    expect(await r.zscore(queueKeys(q).leases, held!.member)).toBeNull();
    const shown = await cli(['--json', 'show', q, 'busy']);
    expect(shown.code).toBe(0);
    expect(json(shown.stdout)).toMatchObject({ id: 'busy', state: 'cancelled' });
    await r.quit();
  });

  it("--run-at, named as add's runAt option; the 0.1 flag --at is refused", async () => {
    const q = uniqueQueue('cli');
    const at = new Date(Date.UTC(2099, 0, 2, 3, 4, 5, 678));
    const added = await cli(['--json', 'add', q, '1', '--id', 'r', '--run-at', at.toISOString()]);
    expect(json(added.stdout)).toMatchObject({ id: 'r', runAt: at.toISOString(), created: true });
    const later = new Date(at.getTime() + 60_000);
    expect((await cli(['reschedule', q, 'r', '--run-at', String(later.getTime())])).code).toBe(0);
    const r = inspector(redis.url());
    expect(Number(await r.zscore(queueKeys(q).waiting, 'r'))).toBe(later.getTime());
    await r.quit();
    for (const args of [
      ['add', q, '2', '--at', at.toISOString()],
      ['reschedule', q, 'r', '--at', at.toISOString()],
    ]) {
      const old = await cli(args);
      expect(old.code).toBe(2);
      expect(old.stderr).toBe("delayq: --at is now --run-at, as add's runAt option\n");
    }
    expect(await newQueue(q).counts()).toMatchObject({ scheduled: 1 });
  });

  it("shows a running job's progress", async () => {
    const q = uniqueQueue('cli');
    const queue = newQueue(q);
    let release = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    let reported = false;
    const worker = new Worker(
      q,
      async (job) => {
        await job.progress({ pct: 40 });
        reported = true;
        await held;
      },
      { connection: redis.url() },
    );
    open.push({ close: async () => (release(), await worker.close()) });
    await queue.add({ n: 1 }, { id: 'p1' });
    await waitFor(() => reported, { what: 'the progress report' });
    expect(json((await cli(['--json', 'show', q, 'p1'])).stdout)).toMatchObject({
      state: 'active',
      progress: { pct: 40 },
    });
    expect((await cli(['show', q, 'p1'])).stdout).toMatch(/progress\s+\{"pct":40\}/);
  });

  it('retries one dead job, then all, then removes dead jobs', async () => {
    const q = uniqueQueue('cli');
    await makeDead(q, ['d1', 'd2', 'd3']);
    const shown = await cli(['--json', 'show', q, 'd1']);
    expect(json(shown.stdout)).toMatchObject({ state: 'dead', lastError: { message: 'broken on purpose' } });
    const dead = await cli(['ls', q, '--state', 'dead']);
    expect(dead.stdout).toContain('Error: broken on purpose');
    // The API's verbs work as well: get for show, list for ls.
    expect(json((await cli(['--json', 'get', q, 'd1'])).stdout)).toEqual(json(shown.stdout));
    expect((await cli(['--json', 'list', q, '--state', 'dead'])).stdout).toBe(
      (await cli(['--json', 'ls', q, '--state', 'dead'])).stdout,
    );

    const one = await cli(['--json', 'retry', q, 'd1']);
    expect(json(one.stdout)).toEqual({ queue: q, retried: 1, ids: ['d1'] });
    const r = inspector(redis.url());
    const keys = queueKeys(q);
    expect(await r.zrange(keys.dead, 0, -1)).toEqual(expect.arrayContaining(['d2', 'd3']));
    expect(await r.zcard(keys.dead)).toBe(2);
    expect(await r.zscore(keys.waiting, 'd1')).not.toBeNull();
    expect((await cli(['retry', q, 'd1'])).code).toBe(1);
    expect((await cli(['retry', q])).code).toBe(2);

    const all = await cli(['--json', 'retry', q, '--all']);
    expect(json(all.stdout)).toEqual({ queue: q, retried: 2 });
    expect(await r.zcard(keys.dead)).toBe(0);
    expect(await r.zcard(keys.waiting)).toBe(3);

    const q2 = uniqueQueue('cli');
    await makeDead(q2, ['p1', 'p2']);
    expect((await cli(['remove', q2])).code).toBe(2);
    // The 0.1 verb is refused, naming the new one; nothing is removed.
    const old = await cli(['purge', q2, '--state', 'dead']);
    expect(old.code).toBe(2);
    expect(old.stderr).toBe(
      "delayq: 'purge' is now 'remove': delayq remove <queue> --all removes every dead job, delayq remove <queue> <id> one\n",
    );
    const k2 = queueKeys(q2);
    expect(await r.zcard(k2.dead)).toBe(2);
    expect(json((await cli(['--json', 'remove', q2, 'p1'])).stdout)).toEqual({
      queue: q2,
      removed: 1,
      ids: ['p1'],
    });
    expect((await cli(['remove', q2, 'p1'])).code).toBe(1);
    const removed = await cli(['--json', 'remove', q2, '--all']);
    expect(json(removed.stdout)).toEqual({ queue: q2, removed: 1 });
    expect(await r.exists(k2.dead, k2.records, k2.errors)).toBe(0);
    await r.quit();
  });
});

describe('delayq add --on-exists', () => {
  it('replace swaps a waiting job’s payload and time; keep leaves it; an unknown mode is a usage error', async () => {
    const q = uniqueQueue('cli');
    expect((await cli(['add', q, '{"v":1}', '--id', 'deb', '--delay', '1h'])).code).toBe(0);
    const kept = await cli([
      '--json',
      'add',
      q,
      '{"v":2}',
      '--id',
      'deb',
      '--delay',
      '2h',
      '--on-exists',
      'keep',
    ]);
    expect(json(kept.stdout)).toMatchObject({ id: 'deb', created: false });
    const text = await cli(['add', q, '{"v":3}', '--id', 'deb', '--delay', '2h', '--on-exists', 'replace']);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^replaced deb {2}due \d{4}-.* \(in 2\.0 h\)\n$/);
    const replaced = await cli([
      '--json',
      'add',
      q,
      '{"v":4}',
      '--id',
      'deb',
      '--delay',
      '3h',
      '--on-exists',
      'replace',
    ]);
    const out = json(replaced.stdout) as { runAt: string; created: boolean; replaced: boolean };
    expect(out).toMatchObject({ id: 'deb', created: false, replaced: true });
    const shown = json((await cli(['--json', 'show', q, 'deb'])).stdout);
    expect(shown).toMatchObject({ state: 'scheduled', payload: { v: 4 }, runAt: out.runAt });

    const bad = await cli(['add', q, '1', '--id', 'deb', '--on-exists', 'merge']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(
      /'--on-exists <mode>' argument 'merge' is invalid. Allowed choices are keep, replace/,
    );
    expect(json((await cli(['--json', 'show', q, 'deb'])).stdout)).toMatchObject({ payload: { v: 4 } });
  });
});

describe('delayq add --file', () => {
  it('adds every job of an NDJSON file in batches', async () => {
    const q = uniqueQueue('cli');
    const file = join(dir, 'jobs.ndjson');
    const lines = Array.from({ length: 1_203 }, (_, i) =>
      JSON.stringify(i === 0 ? { payload: { i }, id: 'first', delay: '2h' } : { payload: { i } }),
    );
    await writeFile(file, `${lines.join('\n')}\n\n`);
    const res = await cli(['--json', 'add', q, '--file', file, '--delay', '1h']);
    expect(res.code).toBe(0);
    expect(json(res.stdout)).toEqual({ queue: q, added: 1_203, existed: 0 });
    expect(res.stderr).toBe('');
    const r = inspector(redis.url());
    expect(await r.zcard(queueKeys(q).waiting)).toBe(1_203);
    const now = await serverNow(r);
    expect(Number(await r.zscore(queueKeys(q).waiting, 'first')) - now).toBeGreaterThan(7_100_000);
    await r.quit();

    await writeFile(file, `${JSON.stringify({ payload: 1, id: 'dated', runAt: 4_102_444_800_000 })}\n`);
    expect((await cli(['add', q, '--file', file])).code).toBe(0);
    const r2 = inspector(redis.url());
    expect(Number(await r2.zscore(queueKeys(q).waiting, 'dated'))).toBe(4_102_444_800_000);
    await r2.quit();
    await writeFile(file, `${JSON.stringify({ payload: 1, at: 4_102_444_800_000 })}\n`);
    const oldField = await cli(['add', q, '--file', file]);
    expect(oldField.code).toBe(2);
    expect(oldField.stderr).toBe(`delayq: line 1: "at" is now "runAt", as add's runAt option\n`);

    await writeFile(file, '{"payload":1}\nnot json\n');
    const bad = await cli(['add', q, '--file', file]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^delayq: line 2 is not JSON: .*\n$/);
  });
});

describe('exit codes and messages', () => {
  it('answers usage errors with 2 and operational errors with 1, each in one line', async () => {
    const q = uniqueQueue('cli');
    // A queue known by its config record alone (no job ever added).
    const known = uniqueQueue('cli');
    await newQueue(known).counts();
    const cases: Array<[string[], number, RegExp]> = [
      [['add', q, '{nope'], 2, /^delayq: the payload is not JSON: /],
      [
        ['add', q, '1', '--delay', 'soon'],
        2,
        /^delayq: option '--delay <duration>' argument 'soon' is invalid/,
      ],
      [['frobnicate'], 2, /^delayq: unknown command 'frobnicate'/],
      [['ls', q, '--state', 'finished'], 2, /Allowed choices are scheduled, waiting-children, active, dead/],
      [['show', q, 'missing'], 1, new RegExp(`^delayq: no queue '${q}' here`)],
      [['ls', q], 1, new RegExp(`^delayq: no queue '${q}' here`)],
      [['show', known, 'missing'], 1, new RegExp(`^delayq: no job 'missing' in queue '${known}'`)],
      [['add', 'bad{name', '1'], 2, /queue name "bad\{name" may not contain braces/],
    ];
    const results = await Promise.all(cases.map(([args]) => cli(args)));
    for (const [i, [args, code, message]] of cases.entries()) {
      const res = results[i]!;
      expect({ args, code: res.code }).toEqual({ args, code });
      expect(res.stderr).toMatch(message);
      expect(res.stderr.trimEnd().split('\n')).toHaveLength(1);
      expect(res.stdout).toBe('');
    }
  });

  it('fails fast with 1 when Redis does not answer', async () => {
    const port = await freePort();
    const started = Date.now();
    const res = await runCli(['stats'], { redisUrl: `redis://127.0.0.1:${port}` });
    expect(res.code).toBe(1);
    expect(res.stderr).toBe(
      `delayq: cannot reach Redis at redis://127.0.0.1:${port}: connect ECONNREFUSED 127.0.0.1:${port}\n`,
    );
    expect(Date.now() - started).toBeLessThan(10_000);
    const flag = await runCli(['--redis', `redis://127.0.0.1:${port}`, 'ls', 'q'], { redisUrl: redis.url() });
    expect(flag.code).toBe(1);
    expect(flag.stderr).toContain(`127.0.0.1:${port}`);
  });
});

describe('terminal output', () => {
  it('colours and draws a progress bar only on a TTY', async () => {
    const q = uniqueQueue('cli');
    await makeDead(
      q,
      Array.from({ length: 40 }, (_, i) => `t${i}`),
    );
    const plain = await cli(['ls', q, '--state', 'dead', '--limit', '1']);
    expect(plain.stdout).not.toContain('\u001b[');
    const tty = await runCliOnTty(['remove', q, '--all'], redis.url());
    expect(tty.code).toBe(0);
    expect(tty.stdout).toMatch(/removing dead jobs of \S+ █+ 100% 40\/40/);
    expect(tty.stdout).toContain('\u001b[32mremoved\u001b[39m 40 dead jobs');
  });
});

describe('delayq worker <module>', () => {
  it('runs the handlers a module exports and drains on SIGTERM, exiting 0', async () => {
    const q = uniqueQueue('cliw');
    const started = join(dir, `${q}.started`);
    const mod = join(dir, `${q}.mjs`);
    await writeFile(
      mod,
      `import { appendFileSync } from 'node:fs';
export const options = { concurrency: 2, keepCompleted: { count: 100 } };
export const handlers = {
  ${JSON.stringify(q)}: async (job) => {
    appendFileSync(${JSON.stringify(started)}, job.id + '\\n');
    if (job.payload.fail) throw new Error('no luck');
    await new Promise((r) => setTimeout(r, job.payload.ms ?? 0));
    return 'ok';
  },
};
`,
    );
    const queue = newQueue(q);
    await queue.add({ fail: true }, { id: 'bad', attempts: 1 });
    await queue.add({ ms: 0 }, { id: 'quick' });
    const proc = startCli(['--json', 'worker', mod], { redisUrl: redis.url() });
    const events = (): Array<Record<string, unknown>> =>
      proc
        .stdout()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Record<string, unknown>);
    await waitFor(() => events().some((e) => e['event'] === 'ready'), { what: 'ready', timeoutMs: 20_000 });
    await waitFor(() => events().some((e) => e['event'] === 'completed' && e['id'] === 'quick'), {
      what: 'quick completed',
    });
    await waitFor(() => events().some((e) => e['event'] === 'dead' && e['id'] === 'bad'), {
      what: 'bad dead',
    });
    // A completed job shows its kept result (not a payload), and lists among the completed.
    const shown = await cli(['show', q, 'quick']);
    expect(shown.stdout).toMatch(/^state +completed$/m);
    expect(shown.stdout).toMatch(/^result\n {2}"ok"$/m);
    expect(shown.stdout).not.toContain('payload');
    const done = json((await cli(['--json', 'ls', q, '--state', 'completed'])).stdout);
    expect(done).toMatchObject({ total: 1, jobs: [{ id: 'quick', state: 'completed', result: 'ok' }] });

    // A long job is running when SIGTERM comes: the drain lets it finish before exiting 0.
    await queue.add({ ms: 1_500 }, { id: 'slow' });
    const r = inspector(redis.url());
    await waitFor(async () => (await newQueue(q).get('slow'))?.state === 'active', {
      what: 'slow claimed',
    });
    proc.child.kill('SIGTERM');
    const res = await proc.done;
    expect(res.code).toBe(0);
    const names = events().map((e) => [e['event'], e['id']].filter((x) => typeof x === 'string').join(':'));
    expect(names.slice(-3)).toEqual(['draining', 'completed:slow', 'stopped']);
    expect(await r.zcard(queueKeys(q).leases)).toBe(0);
    expect(await r.zcard(queueKeys(q).waiting)).toBe(0);
    expect(await r.zscore(queueKeys(q).completed, 'slow')).not.toBeNull();
    await r.quit();
  });

  it('refuses a module without handlers with exit code 2', async () => {
    const mod = join(dir, 'empty.mjs');
    await writeFile(mod, 'export const nothing = 1;\n');
    const res = await cli(['worker', mod]);
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(/exports no handlers/);
  });
});

describe('delayq demo', () => {
  it('--once runs a batch to the end: retries, deaths, lateness', async () => {
    const res = await runCli(
      [
        '--json',
        'demo',
        '--jobs',
        '10',
        '--span',
        '1s',
        '--fail-every',
        '3',
        '--die-every',
        '5',
        '--no-dashboard',
      ],
      { redisUrl: redis.url() },
    );
    expect(res.code).toBe(0);
    const summary = json(res.stdout) as {
      added: number;
      completed: number;
      dead: number;
      retried: number;
      latenessMs: number[];
    };
    // Jobs 5 and 10 die (3 attempts, 2 retries each); 3, 6 and 9 fail once.
    expect(summary).toMatchObject({ added: 10, completed: 8, dead: 2, retried: 7 });
    expect(summary.latenessMs).toHaveLength(10 + 7);
    for (const late of summary.latenessMs) expect(late).toBeGreaterThanOrEqual(0);
  });

  it('runs waves until SIGINT, prints each job with its lateness, and cleans up', async () => {
    const proc = startCli(['demo', '--port', '0', '--wave-every', '300ms'], { redisUrl: redis.url() });
    await waitFor(
      () => /▶ #\d{4} \S+ +due \d\d:\d\d:\d\d\.\d{3} {2}started \d+ ms late/.test(proc.stdout()),
      {
        what: 'a job line',
        timeoutMs: 30_000,
      },
    );
    const url = /dashboard: (http:\/\/127\.0\.0\.1:\d+\/queues\/demo#token=\S+)/.exec(proc.stdout())?.[1];
    expect(url).toBeDefined();
    // The printed link carries the token in its fragment, which no server receives; the sign-in
    // page posts it (as its script does) for a session cookie, and goes back to the queue's page.
    const token = new URLSearchParams(new URL(url!).hash.slice(1)).get('token')!;
    const login = await fetch(new URL('/session', url), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token, next: '/queues/demo' }).toString(),
      redirect: 'manual',
    });
    expect(login.status).toBe(303);
    expect(login.headers.get('location')).toBe('/queues/demo');
    const page = await fetch(new URL('/queues/demo', url), {
      headers: { cookie: login.headers.get('set-cookie')!.split(';')[0]! },
    });
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<h1>demo</h1>');
    proc.child.kill('SIGINT');
    const res = await proc.done;
    expect(res.code).toBe(0);
    expect(res.stdout).toMatch(/\ndone: \d+ added, \d+ completed/);
    await expect(fetch(url!)).rejects.toThrow();
  });
});
