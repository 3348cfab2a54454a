/**
 * `delayq search` (issue 33): a page of queue.search in text and --json, the next page by
 * --cursor, times as ISO dates, epoch ms or durations from now, bad input refused with exit code 2
 * and one line; a flow parent waiting for its children in search, ls and stats; and `delayq show`
 * printing a job's log lines.
 */
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { Queue, Worker } from '../../src/index.js';
import { uniqueQueue, useRedis, waitFor } from '../support/fixtures.js';
import { buildOnce, runCli } from './run-cli.js';

const redis = useRedis();
const open: Array<{ close(): Promise<void> }> = [];
beforeAll(async () => {
  await buildOnce();
}, 240_000);
afterEach(async () => {
  for (const o of open.splice(0).reverse()) await o.close();
});
vi.setConfig({ testTimeout: 60_000 });

const cli = (args: string[]) => runCli(args, { redisUrl: redis.url() });
const json = (text: string): { jobs: Array<{ id: string; state: string }>; cursor: string | null } =>
  JSON.parse(text.trim().split('\n').at(-1)!) as never;

function queueOf(name: string): Queue<number> {
  const queue = new Queue<number>(name, { connection: redis.url() });
  open.push(queue);
  return queue;
}

describe('delayq search', () => {
  it('prints a page, and the next one by --cursor', async () => {
    const q = uniqueQueue('cli-search');
    const queue = queueOf(q);
    await queue.addBulk(
      Array.from({ length: 5 }, (_, i) => ({ payload: i, opts: { id: `order:${i}`, delay: `${i + 1}m` } })),
    );
    await queue.add(9, { id: 'other', delay: '1m' });
    const first = await cli(['--json', 'search', q, '--id-prefix', 'order:', '--limit', '3']);
    expect(first.code).toBe(0);
    const page = json(first.stdout);
    expect(page.jobs.map((j) => j.id)).toEqual(['order:0', 'order:1', 'order:2']);
    expect(page.cursor).toEqual(expect.any(String));
    const next = json(
      (await cli(['--json', 'search', q, '--id-prefix', 'order:', '--limit', '3', '--cursor', page.cursor!]))
        .stdout,
    );
    expect(next.jobs.map((j) => j.id)).toEqual(['order:3', 'order:4']);
    expect(next.cursor).toBeNull();

    const text = await cli(['search', q, '--id-prefix', 'order:', '--limit', '3']);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^id\s+state\s+when\s+group\/priority\s+attempts/m);
    expect(text.stdout).toMatch(/^order:0\s+scheduled\s+in \d+\.\d s\s+0\/3/m);
    expect(text.stdout).toContain(`the same command with --cursor ${page.cursor}`);
    const end = await cli(['search', q, '--id-prefix', 'nope']);
    expect(end.stdout).toContain('no jobs found');
    expect(end.stdout).toContain('0 jobs; end of the search');
  });

  it('takes times as durations from now, ISO dates or epoch ms, and a state', async () => {
    const q = uniqueQueue('cli-search');
    const queue = queueOf(q);
    await queue.add(1, { id: 'soon', delay: '5m' });
    await queue.add(2, { id: 'later', delay: '3h' });
    const within = json((await cli(['--json', 'search', q, '--from', '-1m', '--to', '+1h'])).stdout);
    expect(within.jobs.map((j) => j.id)).toEqual(['soon']);
    const iso = new Date(Date.now() + 2 * 3_600_000).toISOString();
    expect(json((await cli(['--json', 'search', q, '--from', iso])).stdout).jobs.map((j) => j.id)).toEqual([
      'later',
    ]);
    const ms = String(Date.now() + 2 * 3_600_000);
    expect(
      json((await cli(['--json', 'search', q, '--to', ms, '--state', 'scheduled'])).stdout).jobs.map(
        (j) => j.id,
      ),
    ).toEqual(['soon']);
    expect(json((await cli(['--json', 'search', q, '--state', 'dead'])).stdout).jobs).toEqual([]);
  });

  it('finds, lists and counts a flow parent waiting for its children (--state waiting-children)', async () => {
    const q = uniqueQueue('cli-flow');
    const queue = queueOf(q);
    await queue.addFlow({
      payload: 1,
      opts: { id: 'parent', delay: '10m' },
      children: [{ payload: 2, opts: { id: 'child', delay: '1h' } }],
    });
    const found = json((await cli(['--json', 'search', q, '--state', 'waiting-children'])).stdout);
    expect(found.jobs.map((j) => [j.id, j.state])).toEqual([['parent', 'waiting-children']]);
    const text = await cli(['search', q, '--state', 'waiting-children']);
    expect(text.stdout).toMatch(/^parent\s+waiting-children\s+in 9 min \d+ s\s/m);

    const listed = await cli(['--json', 'ls', q, '--state', 'waiting-children']);
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.stdout.trim().split('\n').at(-1)!)).toMatchObject({
      state: 'waiting-children',
      total: 1,
      jobs: [{ id: 'parent', state: 'waiting-children' }],
    });
    const table = await cli(['ls', q, '--state', 'waiting-children']);
    expect(table.stdout).toMatch(/^id\s+due \(at the earliest\)\s+group\/priority\s+attempts\s+payload/m);
    expect(table.stdout).toMatch(/^parent\s+in 9 min \d+ s\s+0\/3\s+1$/m);
    expect(table.stdout).toContain('1-1 of 1 waiting-children');

    const stats = await cli(['--json', 'stats', q]);
    expect(JSON.parse(stats.stdout.trim().split('\n').at(-1)!)).toMatchObject({
      counts: { scheduled: 1, due: 0, waitingChildren: 1 },
    });
    expect((await cli(['stats', q])).stdout).toMatch(/^waiting-children +1 \(flow parents waiting/m);
    const all = await cli(['stats']);
    expect(all.stdout).toMatch(new RegExp(`^${q} +1 +0 +0 +0 +0 +0 +0 +1 +in `, 'm'));
  });

  it('refuses bad input with exit code 2 and one line', async () => {
    const q = uniqueQueue('cli-search');
    await queueOf(q).add(1, { delay: '1h' });
    for (const [args, message] of [
      [['--from', '+2h', '--to', '+1h'], /from \(.*\) is after to/],
      [['--cursor', 'not-a-cursor'], /cursor is not one delayq gave/],
      [['--limit', '5000'], /limit must be a whole number from 1 to 1000/],
      [['--from', 'yesterday-ish'], /expected an ISO date, epoch ms, or a duration from now/],
      [['--state', 'waiting'], /argument 'waiting' is invalid/],
      [['--group', 'g', '--state', 'completed'], /finished jobs are not kept by group/],
      [
        ['--group', 'g', '--state', 'waiting-children'],
        /flow parents waiting for their children are not kept/,
      ],
    ] as const) {
      const r = await cli(['search', q, ...args]);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      expect(r.stderr).toMatch(message);
    }
  });
});

describe('delayq show', () => {
  it('prints a job’s log lines with their attempt and time, in text and --json', async () => {
    const q = uniqueQueue('cli-log');
    const queue = queueOf(q);
    const worker = new Worker<number>(
      q,
      async (job) => {
        await job.log('fetched the invoice');
        await job.log('sent\tto the printer');
        return 'ok';
      },
      { connection: redis.url(), keepCompleted: { count: 10, age: '1h' } },
    );
    open.push({ close: () => worker.close({ timeoutMs: 2_000 }) });
    await queue.add(1, { id: 'printed' });
    await waitFor(async () => (await queue.get('printed'))?.state === 'completed');
    const text = await cli(['show', q, 'printed']);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^log \(2 lines\)$/m);
    expect(text.stdout).toMatch(/^ {2}#1 \d{4}-\d\d-\d\dT[\d:.]+Z {2}fetched the invoice$/m);
    expect(text.stdout).toMatch(/^ {2}#1 \S+ {2}sent\tto the printer$/m);
    const shown = JSON.parse((await cli(['--json', 'show', q, 'printed'])).stdout.trim()) as {
      logs: Array<{ attempt: number; at: string; line: string }>;
    };
    expect(shown.logs.map((l) => [l.attempt, l.line])).toEqual([
      [1, 'fetched the invoice'],
      [1, 'sent\tto the printer'],
    ]);
    expect(new Date(shown.logs[0]!.at).getTime()).toBeGreaterThan(Date.now() - 60_000);
  });
});
