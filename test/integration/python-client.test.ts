/**
 * clients/python, a producer and worker in Python written from docs/PROTOCOL.md, both ways against
 * a real redis-server: Python-made jobs run on a Node Worker, and Node-made jobs on the Python
 * worker, each counted (jobs, early, duplicates, payload mismatches: the last three must be 0),
 * with a stale ack refused, retries after a failure by the worker's backoff and by the job's own,
 * a lease kept by extend, and a cancel of a running job on each side; the client refuses the queues
 * it cannot serve (another codec, the wheel, a worker of a partitioned queue) writing nothing, and
 * its backoff is Node's. Runs test/foreign/python-client.py with Debian's python3-redis.
 */
import { execFile, spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Queue, Worker } from '../../src/index.js';
import { backoffDelay, type ResolvedBackoff } from '../../src/backoff.js';
import { jsonCodec } from '../../src/codec/json.js';
import { expandLua } from '../../src/redis/lua-source.js';
import { partitionKeys } from '../../src/redis/keys.js';
import { inspector, uniqueQueue, useRedis, waitFor } from '../support/fixtures.js';
import { PYTHON_PATH } from '../support/prerequisites.js';
import { REFERENCE_SCRIPTS } from '../../scripts/protocol-tables.js';

const run = promisify(execFile);
const redis = useRedis();
const DRIVER = join(import.meta.dirname, '../foreign/python-client.py');
// The scripts the Python client calls: the protocol reference's (test/docs/protocol-tables.test.ts
// holds the two equal).
const SCRIPTS = REFERENCE_SCRIPTS;
let scriptsDir = '';
const cleanups: Array<() => Promise<void>> = [];

beforeAll(async () => {
  const probe = await run(PYTHON_PATH, ['-c', 'import redis']).catch((e: Error) => e);
  if (probe instanceof Error) {
    throw new Error(`${PYTHON_PATH} cannot import redis: install Debian's python3-redis (${probe.message})`);
  }
  // What the npm package ships as dist/scripts: each script with its includes expanded.
  scriptsDir = await mkdtemp(join(tmpdir(), 'delayq-pyclient-'));
  for (const s of SCRIPTS) {
    await writeFile(
      join(scriptsDir, `${s}.lua`),
      expandLua(join(import.meta.dirname, '../../src/scripts'), `${s}.lua`),
    );
  }
});
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
  await rm(scriptsDir, { recursive: true, force: true });
});

type Line = Record<string, unknown>;
const lines = (stdout: string): Line[] =>
  stdout
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Line);

async function python(...args: string[]): Promise<Line[]> {
  const { stdout } = await run(PYTHON_PATH, [
    DRIVER,
    args[0]!,
    String(redis.server().port),
    ...args.slice(1),
  ]);
  return lines(stdout);
}

/** What the driver's payload(i) stands for, written here on its own. */
function expected(i: number): Record<string, unknown> {
  return {
    i,
    name: `job ${i} \u2713`,
    ratio: i / 7,
    big: 2n ** 64n + BigInt(i),
    huge: 2 ** 60,
    when: new Date(Date.UTC(2026, 0, 2, 3, 4, 5 + i, 6)),
    bytes: new Uint8Array([i % 256, 0, 255]),
    nan: Number.NaN,
    negZero: -0,
    map: new Map<unknown, unknown>([
      [1, 'one'],
      ['k', [true]],
    ]),
    '~tilde': 'escaped',
    nested: { list: [1, 'two', null] },
  };
}

it('Python producer, Node worker: every job once, none early, values intact; Python cancels a running job', async () => {
  const name = uniqueQueue('pyprod');
  const JOBS = 60;
  // The Python producer creates the queue (config.lua), then adds.
  const adds = await python('produce', name, scriptsDir, String(JOBS));
  expect(adds.slice(0, JOBS).every((a) => a['code'] === 'c')).toBe(true);
  expect(adds[JOBS]).toEqual({ id: 'py-0', code: 'k', due: adds[0]!['due'] });
  expect(adds[JOBS + 1]).toEqual({ get: 'py-1', state: 'waiting', i: 1, max: 3 });

  const runs = new Map<
    string,
    Array<{ payload: unknown; claimedAt: number; runAt: number; maxAttempts: number }>
  >();
  let aborted = false;
  const worker = new Worker(
    name,
    async (job) => {
      if (job.id === 'hold-me') {
        await new Promise((resolve) => job.signal.addEventListener('abort', resolve));
        aborted = true;
        return;
      }
      const seen = runs.get(job.id) ?? [];
      seen.push({
        payload: job.payload,
        claimedAt: job.claimedAt.getTime(),
        runAt: job.runAt.getTime(),
        maxAttempts: job.maxAttempts,
      });
      runs.set(job.id, seen);
    },
    { connection: redis.url(), concurrency: 8 },
  );
  const queue = new Queue(name, { connection: redis.url() });
  cleanups.push(
    () => worker.close(),
    () => queue.close(),
  );
  await waitFor(() => runs.size === JOBS, { what: `${JOBS} Python-made jobs run` });

  let early = 0;
  let duplicates = 0;
  let mismatches = 0;
  for (let i = 0; i < JOBS; i++) {
    const seen = runs.get(`py-${i}`) ?? [];
    if (seen.length > 1) duplicates += seen.length - 1;
    for (const s of seen) {
      if (s.claimedAt < s.runAt) early++;
      try {
        expect(s.payload).toEqual(expected(i));
        expect(Object.is((s.payload as { negZero: number }).negZero, -0)).toBe(true);
        expect(s.maxAttempts).toBe(i % 5 === 0 ? 5 : 3);
      } catch {
        mismatches++;
      }
    }
  }

  // A cancel from Python of a job a Node worker is running.
  await queue.add({ hold: true }, { id: 'hold-me' });
  await waitFor(async () => (await queue.get('hold-me'))?.state === 'active', { what: 'hold-me running' });
  expect(await python('cancel', name, scriptsDir, 'hold-me')).toEqual([
    { cancel: 'hold-me', result: 'running' },
  ]);
  await waitFor(() => aborted, { what: 'the Node handler aborted' });
  expect((await queue.get('hold-me'))?.state).toBe('cancelled');
  expect(await python('cancel', name, scriptsDir, 'hold-me')).toEqual([{ cancel: 'hold-me', result: null }]);

  console.log(
    `python producer -> node worker: jobs ${runs.size}, early ${early}, duplicates ${duplicates}, mismatches ${mismatches}`,
  );
  expect({ jobs: runs.size, early, duplicates, mismatches }).toEqual({
    jobs: JOBS,
    early: 0,
    duplicates: 0,
    mismatches: 0,
  });
});

it('Node producer, Python worker: every job once, none early, values intact; stale ack refused, retry, extend, cancel while running', async () => {
  const name = uniqueQueue('pywork');
  const queue = new Queue(name, { connection: redis.url() });
  cleanups.push(() => queue.close());
  const JOBS = 40;
  const special: Record<string, string> = {
    'n-1': 'fail-once',
    'n-2': 'stale',
    'n-3': 'long',
    'n-4': 'fail-once',
  };
  for (let i = 0; i < JOBS; i++) {
    const id = `n-${i}`;
    const mode = special[id];
    await queue.add(
      { ...expected(i), ...(mode ? { mode } : {}) },
      {
        id,
        ...(i % 4 === 0 ? { delay: 200 } : {}),
        // n-4 carries its own backoff (the record's B field), which the worker's gives way to.
        ...(id === 'n-4' ? { backoff: { type: 'exponential' as const, delay: 300 } } : {}),
      },
    );
  }
  await queue.add({ mode: 'cancel-me' }, { id: 'n-cancel' });

  // The worker completes JOBS jobs; n-cancel's ack is refused.
  const child = spawn(PYTHON_PATH, [
    DRIVER,
    'work',
    String(redis.server().port),
    name,
    scriptsDir,
    String(JOBS),
    '60',
  ]);
  const events: Line[] = [];
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
  createInterface({ input: child.stdout }).on('line', (line) => {
    const event = JSON.parse(line) as Line;
    events.push(event);
    if (event['waiting_for_cancel'] === 'n-cancel') {
      void queue.cancel('n-cancel').then((how) => events.push({ nodeCancel: how }));
    }
  });
  const code = await exited;
  expect(code, stderr.slice(-2000)).toBe(0);

  const ranBy = new Map<string, Line[]>();
  for (const e of events.filter((e) => typeof e['run'] === 'string')) {
    ranBy.set(e['run'] as string, [...(ranBy.get(e['run'] as string) ?? []), e]);
  }
  const acks = events.filter((e) => typeof e['ack'] === 'string');
  const completed = acks.filter((a) => a['outcome'] === 'O').map((a) => a['ack'] as string);
  let early = 0;
  let duplicates = 0;
  let mismatches = 0;
  for (let i = 0; i < JOBS; i++) {
    const id = `n-${i}`;
    const runsOf = ranBy.get(id) ?? [];
    // fail-once and stale run twice by design (attempt 1, then 2); every other job once.
    const allowed = special[id] === 'fail-once' || special[id] === 'stale' ? 2 : 1;
    if (runsOf.length > allowed) duplicates += runsOf.length - allowed;
    if (completed.filter((c) => c === id).length !== 1) duplicates++;
    for (const r of runsOf) {
      if ((r['started'] as number) < (r['due'] as number)) early++;
      const decoded = jsonCodec.decodePayload(Buffer.from(r['payload'] as string));
      const mode = special[id];
      try {
        expect(decoded).toEqual({ ...expected(i), ...(mode ? { mode } : {}) });
      } catch {
        mismatches++;
      }
    }
  }
  const jobs = new Set(completed).size;

  // The stale ack was refused (E: its lease had expired), then attempt 2 completed.
  expect(acks.filter((a) => a['ack'] === 'n-2').map((a) => a['outcome'])).toEqual(['E', 'O']);
  expect(ranBy.get('n-2')?.map((r) => r['attempt'])).toEqual([1, 2]);
  // fail-once: RETRY after the backoff (the worker's fixed 50 ms for n-1, n-4's own 300 ms ×
  // 2^0), due between the server's clock before and after the call plus that delay; then
  // completed on attempt 2.
  for (const [id, delay] of [
    ['n-1', 50],
    ['n-4', 300],
  ] as const) {
    const failed = events.find((e) => e['failed'] === id)!;
    expect(failed['outcome']).toBe('RETRY');
    expect(failed['at']).toBeGreaterThanOrEqual((failed['before'] as number) + delay);
    expect(failed['at']).toBeLessThanOrEqual((failed['after'] as number) + delay);
    expect(ranBy.get(id)?.map((r) => r['attempt'])).toEqual([1, 2]);
  }
  // long: kept past twice its lease by extend, never lost, one run.
  expect(events.some((e) => e['lost'] === 'n-3')).toBe(false);
  // cancel while running: Node's cancel took it, the worker heard `C <member>`, its ack was refused.
  expect(events).toContainEqual({ nodeCancel: true });
  expect(events).toContainEqual({ saw_cancel: 'n-cancel', cancelled: true });
  expect(acks.filter((a) => a['ack'] === 'n-cancel').map((a) => a['outcome'])).toEqual(['C']);
  expect((await queue.get('n-cancel'))?.state).toBe('cancelled');
  expect(await queue.get('n-5')).toMatchObject({ state: 'completed', result: { done: 'n-5' } });
  // job.log through log.lua: each attempt's line, kept with the completed job.
  expect((await queue.get('n-1'))?.logs?.map((l) => [l.attempt, l.line])).toEqual([
    [1, 'python attempt 1'],
    [2, 'python attempt 2'],
  ]);

  console.log(
    `node producer -> python worker: jobs ${jobs}, early ${early}, duplicates ${duplicates}, mismatches ${mismatches}`,
  );
  expect({ jobs, early, duplicates, mismatches }).toEqual({
    jobs: JOBS,
    early: 0,
    duplicates: 0,
    mismatches: 0,
  });
});

it('the Python producer writes each job into its partition of a partitioned queue (fnv1a32 of the id)', async () => {
  const name = uniqueQueue('pypart');
  const queue = new Queue(name, { connection: redis.url(), partitions: 4 });
  const seen = new Map<string, number>();
  const worker = new Worker(name, async (job) => void seen.set(job.id, (seen.get(job.id) ?? 0) + 1), {
    connection: redis.url(),
    partitions: 4,
  });
  cleanups.push(
    () => worker.close(),
    () => queue.close(),
  );
  await queue.counts(); // records partitions: 4
  const JOBS = 24;
  const adds = await python('produce', name, scriptsDir, String(JOBS));
  expect(adds.slice(0, JOBS).every((a) => a['code'] === 'c')).toBe(true);
  expect(adds[JOBS]).toMatchObject({ id: 'py-0', code: 'k' });
  // The jobs are spread over the partitions, each where a Node client looks for it (get below).
  const raw = inspector(redis.url());
  cleanups.push(async () => void (await raw.quit()));
  const sizes = await Promise.all([0, 1, 2, 3].map((p) => raw.hlen(`dq:{${name}#${p}}:j`)));
  expect(sizes.reduce((a, b) => a + b, 0)).toBe(JOBS);
  expect(sizes.filter((n) => n > 0).length).toBeGreaterThan(1);
  await waitFor(() => seen.size === JOBS, { what: `${JOBS} jobs run from 4 partitions` });
  expect([...seen.values()].every((n) => n === 1)).toBe(true);
  for (let i = 0; i < JOBS; i++) expect((await queue.get(`py-${i}`))?.state).toBe('completed');
});

it('after a re-partition the Python producer places its ids by the base count: an id added before is kept, not added twice', async () => {
  const name = uniqueQueue('pyrepart');
  const queue = new Queue(name, { connection: redis.url(), partitions: 2 });
  cleanups.push(() => queue.close());
  await queue.addBulk(
    Array.from({ length: 12 }, (_, i) => ({ payload: { i }, opts: { id: `py-${i}`, delay: '1h' } })),
  );
  await queue.repartition(4);
  const adds = await python('produce', name, scriptsDir, '24');
  expect(adds.slice(0, 12).map((a) => a['code'])).toEqual(Array.from({ length: 12 }, () => 'k'));
  expect(adds.slice(12, 24).every((a) => a['code'] === 'c')).toBe(true);
  const raw = inspector(redis.url());
  cleanups.push(async () => void (await raw.quit()));
  const records = await Promise.all(partitionKeys(name, 4).map((k) => raw.hlen(k.records)));
  expect(records.reduce((a, b) => a + b, 0)).toBe(24);
  // Only the base partitions hold them, where the Node client looks first.
  expect(records.slice(2)).toEqual([0, 0]);
});

it('the Python client refuses a queue it cannot serve, writing nothing: another codec, the wheel, a worker of a partitioned queue', async () => {
  const raw = inspector(redis.url());
  cleanups.push(async () => void (await raw.quit()));
  /** Every key of the queue and its partitions, with its DUMP. */
  const snapshot = async (name: string): Promise<Map<string, string>> => {
    const out = new Map<string, string>();
    for (const key of (await raw.keys(`dq:{${name}*`)).sort()) {
      out.set(key, (await raw.dumpBuffer(key))?.toString('hex') ?? 'gone');
    }
    return out;
  };
  const open = async (options: ConstructorParameters<typeof Queue>[1]): Promise<Line[]> => {
    const name = uniqueQueue('pyopen');
    const queue = new Queue(name, { connection: redis.url(), ...options });
    cleanups.push(() => queue.close());
    await queue.counts();
    const before = await snapshot(name);
    const answers = await python('open', name, scriptsDir);
    expect(await snapshot(name)).toEqual(before);
    return answers;
  };
  expect(await open({ codec: 'msgpack' })).toEqual([{ queue: 'DELAYQ_CONFIG_MISMATCH codec msgpack' }]);
  expect(await open({ strategy: 'wheel', wheel: { granularityMs: 1000 } })).toEqual([
    { queue: 'DELAYQ_CONFIG_MISMATCH layout wheel:1000' },
  ]);
  const partitioned = await open({ partitions: 4 });
  expect(partitioned[0]).toEqual({ queue: 'opened', partitions: 4 });
  expect(partitioned[1]?.['worker']).toMatch(
    /has 4 partitions; this worker serves unpartitioned queues only \(nothing was written\)/,
  );
  // A queue it can serve: the worker registers (a holder number) and drops it at close.
  const fine = await python('open', uniqueQueue('pyopen'), scriptsDir);
  expect(fine).toEqual([
    { queue: 'opened', partitions: 1 },
    { worker: 'opened', holder: 1 },
  ]);
});

it("the Python client's retry delays are Node's backoffDelay, with jitter within [delay/2, delay]", async () => {
  const specs: Array<[ResolvedBackoff, number]> = [
    [{ type: 'fixed', delay: 5000 }, 1],
    [{ type: 'fixed', delay: 5000 }, 4],
    [{ type: 'exponential', delay: 1000 }, 1],
    [{ type: 'exponential', delay: 1000 }, 5],
    [{ type: 'exponential', delay: 1000, max: 3000 }, 5],
    [{ type: 'exponential', delay: 333, jitter: true }, 3],
    [{ type: 'fixed', delay: 7, jitter: true }, 1],
  ];
  const { stdout } = await run(PYTHON_PATH, [
    DRIVER,
    'backoff',
    JSON.stringify(
      specs.map(([b, attempt]) => [
        b.type,
        b.delay,
        b.type === 'exponential' ? (b.max ?? null) : null,
        b.jitter ?? false,
        attempt,
      ]),
    ),
  ]);
  const answers = lines(stdout);
  expect(answers).toHaveLength(specs.length);
  specs.forEach(([b, attempt], i) => {
    const answer = answers[i]!;
    if (!b.jitter) {
      expect(answer, JSON.stringify(b)).toMatchObject({
        least: backoffDelay(b, attempt, undefined),
        most: backoffDelay(b, attempt, undefined),
      });
    } else {
      // Node's extremes: random() = 0 gives delay/2, random() near 1 gives delay (each rounded).
      expect(answer['least']).toBeGreaterThanOrEqual(backoffDelay(b, attempt, undefined, () => 0));
      expect(answer['most']).toBeLessThanOrEqual(backoffDelay(b, attempt, undefined, () => 0.999999));
      expect(answer['least']).toBeLessThan(answer['most'] as number);
    }
  });
});

it("the Python client refuses to cancel a flow's parent with children in another queue, writing nothing", async () => {
  const raw = inspector(redis.url());
  cleanups.push(async () => void (await raw.quit()));
  const a = uniqueQueue('pyflow-a');
  const b = uniqueQueue('pyflow-b');
  const qa = new Queue(a, { connection: redis.url() });
  const qb = new Queue(b, { connection: redis.url() });
  cleanups.push(
    () => qa.close(),
    () => qb.close(),
  );
  await qb.counts();
  await qa.addFlow({
    payload: 'p',
    opts: { id: 'p' },
    children: [{ payload: 'c', opts: { id: 'c' }, queue: b }],
  });
  const dump = async (): Promise<string[]> => {
    const keys = (await raw.keys(`dq:{${a}}:*`)).concat(await raw.keys(`dq:{${b}}:*`)).sort();
    return Promise.all(keys.map(async (k) => `${k}=${(await raw.dumpBuffer(k))?.toString('hex')}`));
  };
  const before = await dump();
  const [answer] = await python('cancel', a, scriptsDir, 'p');
  expect(answer?.['error']).toMatch(
    new RegExp(`flow's parent with children in queue\\(s\\) ${b}.*nothing was written`),
  );
  expect(await dump()).toEqual(before);
  expect((await qa.get('p'))?.state).toBe('waiting-children');
});
