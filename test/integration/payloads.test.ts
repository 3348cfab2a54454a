/**
 * Payloads across deploys: schema validation at add and in the worker, version upgrades, and jobs
 * from a newer version than the worker knows.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  Queue,
  UnsupportedVersionError,
  ValidationError,
  Worker,
  type WorkerOptions,
} from '../../src/index.js';
import { queueKeys } from '../../src/redis/keys.js';
import { inspector, serverNow, uniqueQueue, useRedis, waitFor } from '../support/fixtures.js';

const redis = useRedis();
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((c) => c()));
});

function queue<T>(name: string, options: ConstructorParameters<typeof Queue<T>>[1] = {}): Queue<T> {
  const q = new Queue<T>(name, { connection: redis.url(), ...options });
  closers.push(() => q.close());
  return q;
}

function worker<T>(
  name: string,
  handler: ConstructorParameters<typeof Worker<T>>[1],
  options: WorkerOptions<T> = {},
): Worker<T> {
  const w = new Worker<T>(name, handler, { connection: redis.url(), ...options });
  closers.push(() => w.close({ timeoutMs: 1_000 }));
  return w;
}

const Email = z.object({
  to: z.email(),
  subject: z.string().min(1),
  sendAt: z.coerce.date(),
});

describe('schema validation', () => {
  it('add throws a ValidationError listing every issue with its path, and writes nothing', async () => {
    const name = uniqueQueue('schema');
    const q = queue(name, { schema: Email });
    const failure = await q
      .add({ to: 'not-an-email', subject: '', sendAt: new Date() })
      .catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(ValidationError);
    const issues = (failure as ValidationError).issues;
    expect(issues.map((i) => i.path).sort()).toEqual(['payload.subject', 'payload.to']);
    expect((failure as Error).message).toMatch(/payload failed validation \(2 issues\): .*payload\.to/);
    const r = inspector(redis.url());
    expect(await r.exists(...Object.values(queueKeys(name)))).toBe(0);
    await r.quit();
    await expect(q.add({ to: 'a@b.co', subject: 'hi', sendAt: new Date() })).resolves.toMatchObject({
      created: true,
    });
  });

  it('the worker validates after decode: the handler gets the schema output; an invalid payload is dead with the issues', async () => {
    const name = uniqueQueue('schema');
    const producer = queue<unknown>(name); // an old producer without the schema
    await producer.add({ to: 'a@b.co', subject: 'ok', sendAt: '2030-01-01T00:00:00.000Z' }, { id: 'good' });
    await producer.add({ to: 'nope', subject: 'bad', sendAt: 'x' }, { id: 'bad', attempts: 5 });
    const seen: unknown[] = [];
    const dead: string[] = [];
    const w = worker(name, async (job) => void seen.push(job.payload.sendAt), { schema: Email });
    w.on('dead', (_job, err, id) => dead.push(`${id}: ${err.message}`));
    await waitFor(() => seen.length === 1 && dead.length === 1, { what: 'one run and one dead' });
    expect(seen[0]).toEqual(new Date('2030-01-01T00:00:00.000Z'));
    expect(dead[0]).toMatch(/^bad: payload failed validation \(2 issues\)/);
    const info = await producer.get('bad');
    expect(info).toMatchObject({ state: 'dead', attempts: 1, lastError: { name: 'ValidationError' } });
  });
});

describe('versions', () => {
  it('upgrades older payloads step by step before the handler sees them', async () => {
    const name = uniqueQueue('ver');
    await queue<{ name: string }>(name, { version: 1 }).add({ name: 'Ada Lovelace' });
    await queue<{ first: string; last: string }>(name, { version: 2 }).add({ first: 'Alan', last: 'Turing' });
    const seen: unknown[] = [];
    worker<{ first: string; last: string; greeting: string }>(
      name,
      async (job) => void seen.push(job.payload),
      {
        version: 3,
        migrate: {
          1: (v1: { name: string }) => {
            const [first = '', last = ''] = v1.name.split(' ');
            return { first, last };
          },
          2: (v2: { first: string; last: string }) => ({ ...v2, greeting: `Dear ${v2.first}` }),
        },
      },
    );
    await waitFor(() => seen.length === 2);
    expect(seen).toContainEqual({ first: 'Ada', last: 'Lovelace', greeting: 'Dear Ada' });
    expect(seen).toContainEqual({ first: 'Alan', last: 'Turing', greeting: 'Dear Alan' });
  });

  it('a payload from a newer version is put back for later, uncharged, with an UnsupportedVersionError; an upgraded worker runs it', async () => {
    const name = uniqueQueue('ver');
    const producer = queue<{ v: number }>(name, { version: 3 });
    const { id } = await producer.add({ v: 3 }, { attempts: 1 });
    const errors: Error[] = [];
    const ran: string[] = [];
    const old = worker(name, async () => void ran.push('old'), { version: 2, newerVersionDelay: '10m' });
    old.on('error', (e) => errors.push(e));
    await waitFor(() => errors.length === 1, { what: 'the version error' });
    expect(errors[0]).toBeInstanceOf(UnsupportedVersionError);
    expect(errors[0]?.message).toMatch(/version 3 but this worker knows up to 2/);
    const info = await producer.get(id);
    const r = inspector(redis.url());
    const now = await serverNow(r);
    await r.quit();
    expect(info).toMatchObject({ state: 'scheduled', attempts: 0 });
    expect(info!.runAt.getTime() - now).toBeGreaterThan(9 * 60_000);
    await old.close();
    expect(ran).toEqual([]);
    // The upgraded worker arrives; make the job due now to not wait ten minutes.
    await producer.reschedule(id, { delay: 0 });
    worker(name, async () => void ran.push('new'), { version: 3 });
    await waitFor(() => ran.length === 1);
    expect(ran).toEqual(['new']);
  });

  it('a missing upgrade step dead-letters the job with a reason that says what to add', async () => {
    const name = uniqueQueue('ver');
    await queue(name, { version: 1 }).add('x', { id: 'old' });
    const dead: string[] = [];
    const w = worker(name, async () => {}, { version: 3, migrate: { 2: (x: unknown) => x } });
    w.on('dead', (_j, err) => dead.push(err.message));
    await waitFor(() => dead.length === 1);
    expect(dead[0]).toMatch(/no migrate\[1\] to upgrade version 1 to 2/);
  });

  it('rejects bad version options', () => {
    expect(() => new Queue('x', { version: 0 })).toThrow(/version must be a whole number >= 1/);
    expect(() => new Worker('x', async () => {}, { version: 1.5, autorun: false })).toThrow(
      /version must be/,
    );
    // @ts-expect-error -- not a function
    expect(() => new Worker('x', async () => {}, { migrate: { 1: 'nope' }, autorun: false })).toThrow(
      /migrate\[1\]/,
    );
    // @ts-expect-error -- not a schema
    expect(() => new Queue('x', { schema: { parse: () => 1 } })).toThrow(/Standard Schema/);
  });
});
