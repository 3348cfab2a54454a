/**
 * Prototype of the layout-2 hot path (docs/ARCHITECTURE.md): the core add, claim and ack cost of
 * the prototype scripts, inside one private redis-server (never the shared one on 6379), started on
 * a free port and stopped by pid.
 *
 * Per variant and claim batch size B it adds the jobs (immediate, tiny payload), then one client
 * claims and acks them in batches of B until none is left, and prints Redis CPU (INFO cpu, user +
 * sys) and commands (INFO commandstats, commands run inside scripts included) per job. Then it
 * adds jobs delayed an hour with a 100-byte JSON payload and prints MEMORY USAGE per job of each
 * key and the used_memory growth per job.
 *
 * - new: bench/prototype/add.lua and claim.lua; one call acks the last batch and claims the next.
 * - new, priorities: the same with priorities -50..49 (one in a hundred at the default 0).
 * - new, groups: the same with every job in one of 100 groups, group concurrency 1.
 *
 * The "today" rows of docs/history/hot-path-proposal.md §11 (layout 1's scripts, then in src/scripts) cannot be run any
 * more: layout 2 replaced those scripts, so the runner keeps the prototype's variants only. The
 * memory table keeps a 22-char-id row of the new layout for the id-length comparison.
 *
 * Indicative only: one client, no handler work, no network but loopback; on a shared machine the
 * µs move with the load (printed), the command counts and bytes do not.
 *
 * Run: node --import tsx bench/prototype/run.ts [--jobs=20000] [--jobs-c1=4000] [--memory-jobs=100000]
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { Redis } from 'ioredis';
import type { Reply } from '../../src/redis/scripts.js';
import { startRedis } from '../../src/testing/redis-server.js';
import { callsBetween, commandCalls, cpuMicros, usedMemory } from '../lib/redis.js';
import { runMain } from '../lib/main.js';

const arg = (name: string, fallback: number): number => {
  const found = process.argv.find((a) => a.startsWith(`--${name}=`));
  return found ? Number(found.slice(name.length + 3)) : fallback;
};
const JOBS = arg('jobs', 20_000);
const JOBS_C1 = arg('jobs-c1', 4_000);
const MEMORY_JOBS = arg('memory-jobs', 100_000);
const BATCHES = [1, 25, 50];
const ADD_CHUNK = 1_000;
const LEASE_MS = 30_000;
/** Group concurrency of the grouped variant (passed to every call, as the config would). */
const GROUP_MAX = 1;
const GROUPS = 100;
const HOUR_MS = 3_600_000;

/** A random id of `length` characters: 14 as layout 2 generates them (§3.3), 22 as layout 1 did. */
const newId = (length = 22): string => randomBytes(length).toString('base64url').slice(0, length);

/** A JSON payload of exactly 100 bytes (W5's size). */
function payload100(i: number): Record<string, unknown> {
  const base = { to: `user${i}@example.com`, template: 'welcome', pad: '' };
  base.pad = 'x'.repeat(100 - JSON.stringify(base).length);
  return base;
}

// ---------------------------------------------------------------------------------------------
// Layout 2 (the proposal): keys, record header, calls.

/** The prototype's keys of queue `q` (in src they would come from src/redis/keys.ts). */
function newKeys(q: string) {
  const k = (role: string): string => `dq:{${q}}:${role}`;
  return {
    s: k('s'),
    p: k('p'),
    r: k('r'),
    z: k('z'),
    j: k('j'),
    a: k('a'),
    c: k('c'),
    e: k('e'),
    w: k('w'),
    n: k('n'),
    gq: k('gq'),
    gw: k('gw'),
    gr: k('gr'),
    gc: k('gc'),
  };
}
type NewKeys = ReturnType<typeof newKeys>;

/**
 * A record as a producer writes it (docs/ARCHITECTURE.md §3): format 1, flags (0x08: a priority follows;
 * 0x10: a group block follows), the priority or the group block (length, name, due time left 0
 * for the script to write); then the payload as the codec encodes it (plain JSON here). Default
 * options store nothing but the two bytes.
 */
function newRecord(payload: Buffer, priority?: number, group?: string): Buffer {
  if (group !== undefined) {
    const name = Buffer.from(group);
    const header = Buffer.alloc(3 + name.length + 6);
    header.writeUInt8(1, 0);
    header.writeUInt8(0x10, 1);
    header.writeUInt8(name.length, 2);
    name.copy(header, 3);
    return Buffer.concat([header, payload]);
  }
  const header = Buffer.alloc(2 + (priority === undefined ? 0 : 2));
  header.writeUInt8(1, 0);
  header.writeUInt8(priority === undefined ? 0 : 0x08, 1);
  if (priority !== undefined) header.writeInt16BE(priority, 2);
  return Buffer.concat([header, payload]);
}

interface Loaded {
  sha: string;
}
async function load(client: Redis, source: string): Promise<Loaded> {
  return { sha: (await client.script('LOAD', source)) as string };
}

interface NewJob {
  id: string;
  record: Buffer;
  delayMs: number;
  priority?: number;
  group?: string;
}

async function addNew(client: Redis, keys: NewKeys, addSha: string, jobs: readonly NewJob[]): Promise<void> {
  const args: Array<string | number | Buffer> = [jobs.length, 0, GROUP_MAX];
  for (const job of jobs) {
    const kind =
      job.group !== undefined
        ? `G${job.group}`
        : job.priority === undefined || job.priority === 0
          ? 'd'
          : `D${job.priority}`;
    args.push(job.id, kind, job.delayMs, job.record);
  }
  const reply = (await client.callBuffer(
    'EVALSHA',
    addSha,
    11,
    keys.s,
    keys.p,
    keys.r,
    keys.j,
    keys.c,
    keys.w,
    keys.n,
    keys.gq,
    keys.gw,
    keys.gr,
    keys.gc,
    ...args,
  )) as Reply[];
  for (let i = 0; i < jobs.length; i++) {
    if (reply[2 * i] !== 1) throw new Error(`new add: job ${i} not created (${String(reply[2 * i])})`);
  }
}

interface NewClaimed {
  id: string;
  member: string;
  priority: number;
  group: string | undefined;
  due: number;
}

interface ClaimReply {
  now: number;
  nextAt: number;
  paused: boolean;
  acks: string[];
  jobs: NewClaimed[];
}

/** One combined call: ack `acks` (lease members), claim up to `limit`; the reply as it came. */
async function claimRaw(
  client: Redis,
  keys: NewKeys,
  claimSha: string,
  acks: readonly string[],
  limit: number,
  leaseMs = LEASE_MS,
): Promise<ClaimReply> {
  const args: Array<string | number> = [limit, leaseMs, 7, GROUP_MAX, acks.length];
  for (const member of acks) args.push(member, '0');
  const reply = (await client.callBuffer(
    'EVALSHA',
    claimSha,
    12,
    keys.s,
    keys.p,
    keys.r,
    keys.z,
    keys.j,
    keys.a,
    keys.c,
    keys.e,
    keys.gq,
    keys.gw,
    keys.gr,
    keys.gc,
    ...args,
  )) as Reply[];
  const outcomes = acks.map((_, i) => String(reply[3 + i]));
  const count = reply[3 + acks.length] as number;
  const jobs: NewClaimed[] = [];
  for (let i = 0; i < count; i++) {
    const at = 4 + acks.length + i * 4;
    // The lease member: "<token>|<id>", and "\0<group>" after it for a grouped job.
    const member = String(reply[at]);
    const afterToken = member.slice(member.indexOf('|') + 1);
    const zero = afterToken.indexOf('\0');
    const id = zero < 0 ? afterToken : afterToken.slice(0, zero);
    const group = zero < 0 ? undefined : afterToken.slice(zero + 1);
    const record = reply[at + 2] as Buffer;
    const flags = record.readUInt8(1);
    if (record.readUInt8(0) !== 1 || (flags & 1) === 0) throw new Error(`new claim: bad header for ${id}`);
    // Format, flags (no second flags byte here), the 20-byte claim block, then the priority.
    const priority = flags & 0x08 ? record.readInt16BE(22) : 0;
    jobs.push({ id, member, priority, group, due: reply[at + 3] as number });
  }
  return {
    now: reply[0] as number,
    nextAt: reply[1] as number,
    paused: reply[2] === 1,
    acks: outcomes,
    jobs,
  };
}

/** The same, throwing unless every ack was applied. */
async function claimNew(
  client: Redis,
  keys: NewKeys,
  claimSha: string,
  acks: readonly string[],
  limit: number,
): Promise<NewClaimed[]> {
  const reply = await claimRaw(client, keys, claimSha, acks, limit);
  const refused = reply.acks.find((o) => o !== 'OK');
  if (refused !== undefined) throw new Error(`new ack refused: ${refused}`);
  return reply.jobs;
}

/**
 * Before measuring, the prototype's guarantees, so figures never come from scripts that cut a
 * corner: never early, pause, fencing (a foreign token, an expired lease), a resent ack.
 */
async function checkGuarantees(client: Redis, control: Redis): Promise<void> {
  await control.flushall();
  const keys = newKeys('check');
  const addSha = (await load(client, readFileSync(new URL('./add.lua', import.meta.url), 'utf8'))).sha;
  const claimSha = (await load(client, readFileSync(new URL('./claim.lua', import.meta.url), 'utf8'))).sha;
  const fail = (what: string): never => {
    throw new Error(`prototype check failed: ${what}`);
  };
  const record = newRecord(Buffer.from('{}'));

  // Never early: a job due in 300 ms is not claimed now, and the reply says when to look again.
  await addNew(client, keys, addSha, [{ id: 'later', record, delayMs: 300 }]);
  const early = await claimRaw(client, keys, claimSha, [], 10);
  if (early.jobs.length !== 0) fail('a job due in 300 ms was claimed at once');
  if (early.nextAt < early.now + 250 || early.nextAt > early.now + 300)
    fail(`next_at ${early.nextAt} vs now ${early.now}`);
  const one = await claimRaw(client, keys, claimSha, [], 1);
  if (one.jobs.length !== 0) fail('the ZPOPMIN path claimed a job before its time');
  if ((await control.zcard(keys.s)) !== 1) fail('the ZPOPMIN path did not put the job back');

  // Pause: nothing is leased while the flag is there; the job comes once it is gone.
  await addNew(client, keys, addSha, [{ id: 'now', record, delayMs: 0 }]);
  await control.set(keys.z, '1');
  const paused = await claimRaw(client, keys, claimSha, [], 10);
  if (!paused.paused || paused.jobs.length !== 0) fail('a paused queue leased a job');
  await control.del(keys.z);
  const resumed = await claimRaw(client, keys, claimSha, [], 10);
  const job = resumed.jobs[0];
  if (resumed.paused || resumed.jobs.length !== 1 || job?.id !== 'now') fail('no job after resume');

  // Fencing: a member with another token is refused; the right one is applied once, then ALREADY.
  const forged = job!.member.replace(/^\d+/, (claims) => String(Number(claims) + 1));
  const refused = await claimRaw(client, keys, claimSha, [forged], 0);
  if (refused.acks[0] !== 'LOST not held') fail(`a forged token got ${refused.acks[0]}`);
  const applied = await claimRaw(client, keys, claimSha, [job!.member], 0);
  if (applied.acks[0] !== 'OK') fail(`the holder's ack got ${applied.acks[0]}`);
  const resent = await claimRaw(client, keys, claimSha, [job!.member], 0);
  if (resent.acks[0] !== 'ALREADY') fail(`a resent ack got ${resent.acks[0]}`);

  // An expired lease cannot ack: wait (bounded) until the server clock passes a 5 ms deadline.
  await addNew(client, keys, addSha, [{ id: 'short', record, delayMs: 0 }]);
  const short = await claimRaw(client, keys, claimSha, [], 1, 5);
  const held = short.jobs[0] ?? fail('no job for the lease check');
  const deadline = short.now + 5;
  for (let i = 0; ; i++) {
    const [sec = 0, usec = 0] = (await control.time()).map(Number);
    if (sec * 1000 + Math.floor(usec / 1000) > deadline) break;
    if (i > 1000) fail('the server clock did not pass the deadline');
  }
  const late = await claimRaw(client, keys, claimSha, [held.member], 0);
  if (late.acks[0] !== 'LOST expired') fail(`an expired lease's ack got ${late.acks[0]}`);
  console.log('prototype checks passed: never early, pause, foreign token, resent ack, expired lease\n');
}

// ---------------------------------------------------------------------------------------------
// Measuring.

interface Snapshot {
  cpu: number;
  calls: Map<string, number>;
  at: number;
}
async function snapshot(control: Redis): Promise<Snapshot> {
  return { cpu: await cpuMicros(control), calls: await commandCalls(control), at: performance.now() };
}
interface PhaseFigures {
  cpuUs: number;
  commands: number;
  scripts: number;
  perSecond: number;
}
function between(a: Snapshot, b: Snapshot, jobs: number): PhaseFigures {
  const scripts = (b.calls.get('evalsha') ?? 0) - (a.calls.get('evalsha') ?? 0);
  return {
    cpuUs: (b.cpu - a.cpu) / jobs,
    commands: callsBetween(a.calls, b.calls) / jobs,
    scripts: scripts / jobs,
    perSecond: jobs / ((b.at - a.at) / 1000),
  };
}

type Variant = 'new' | 'new, 100 priorities' | 'new, 100 groups (1 running each)';
const VARIANTS: Variant[] = ['new', 'new, 100 priorities', 'new, 100 groups (1 running each)'];

interface Row {
  variant: Variant;
  batch: number;
  jobs: number;
  add: PhaseFigures;
  process: PhaseFigures;
}

async function runVariant(
  client: Redis,
  control: Redis,
  variant: Variant,
  batch: number,
  n: number,
): Promise<Row> {
  await control.flushall();
  const q = 'proto';
  const keys = newKeys(q);
  const addSha = (await load(client, readFileSync(new URL('./add.lua', import.meta.url), 'utf8'))).sha;
  const claimSha = (await load(client, readFileSync(new URL('./claim.lua', import.meta.url), 'utf8'))).sha;

  // Add: n immediate jobs with a tiny payload, in chunks, as W1 does.
  const before = await snapshot(control);
  for (let first = 0; first < n; first += ADD_CHUNK) {
    const count = Math.min(ADD_CHUNK, n - first);
    const jobs: NewJob[] = [];
    for (let i = first; i < first + count; i++) {
      const priority = variant === 'new, 100 priorities' ? (i % 100) - 50 : undefined;
      const group = variant.includes('groups') ? `tenant-${i % GROUPS}` : undefined;
      const record = newRecord(Buffer.from(JSON.stringify({ n: i })), priority, group);
      const job: NewJob = { id: newId(14), record, delayMs: 0 };
      if (priority !== undefined) job.priority = priority;
      if (group !== undefined) job.group = group;
      jobs.push(job);
    }
    await addNew(client, keys, addSha, jobs);
  }
  const added = await snapshot(control);

  // Process: claim B, ack them; until a claim finds nothing.
  let processed = 0;
  let lastPriority = -Infinity;
  let inversions = 0;
  // Groups: each call acks the previous batch before it claims, so one batch may hold at most
  // GROUP_MAX jobs of a group; and a group's jobs must come in due order.
  let overGroupLimit = 0;
  let outOfOrder = 0;
  const lastDue = new Map<string, number>();
  let acks: string[] = [];
  for (;;) {
    const jobs = await claimNew(client, keys, claimSha, acks, batch);
    const inBatch = new Map<string, number>();
    for (const job of jobs) {
      if (job.priority < lastPriority) inversions++;
      lastPriority = job.priority;
      if (job.group !== undefined) {
        const running = (inBatch.get(job.group) ?? 0) + 1;
        inBatch.set(job.group, running);
        if (running > GROUP_MAX) overGroupLimit++;
        if (job.due < (lastDue.get(job.group) ?? -Infinity)) outOfOrder++;
        lastDue.set(job.group, job.due);
      }
    }
    processed += jobs.length;
    acks = jobs.map((j) => j.member);
    if (jobs.length === 0) break;
  }
  const done = await snapshot(control);
  if (processed !== n) throw new Error(`${variant} B=${batch}: processed ${processed} of ${n}`);
  if (inversions > 0)
    throw new Error(`${variant} B=${batch}: ${inversions} jobs claimed before a lower priority`);
  if (overGroupLimit > 0)
    throw new Error(`${variant} B=${batch}: a group ran more than ${GROUP_MAX} at once`);
  if (outOfOrder > 0) throw new Error(`${variant} B=${batch}: ${outOfOrder} grouped jobs out of due order`);
  if (variant.includes('groups')) {
    const leftover =
      (await control.hlen(keys.gc)) +
      (await control.zcard(keys.gq)) +
      (await control.zcard(keys.gw)) +
      (await control.zcard(keys.gr));
    if (leftover !== 0) throw new Error(`${variant} B=${batch}: group state left behind (${leftover})`);
  }
  // An ack leaves a completed record (visible, trimmed by count and age) in j and the id in c.
  const left = (await control.zcard(keys.s)) + (await control.zcard(keys.r)) + (await control.zcard(keys.a));
  if (left !== 0) throw new Error(`${variant} B=${batch}: ${left} jobs or leases left behind`);
  if ((await control.zcard(keys.c)) !== n) throw new Error(`${variant} B=${batch}: completed set incomplete`);
  return { variant, batch, jobs: n, add: between(before, added, n), process: between(added, done, n) };
}

type MemoryLayout = 'new, 22-char ids' | 'new';
interface MemoryRow {
  layout: MemoryLayout;
  perKey: Array<[string, number]>;
  usedPerJob: number;
}

async function runMemory(client: Redis, control: Redis, layout: MemoryLayout, n: number): Promise<MemoryRow> {
  await control.flushall();
  const q = 'mem';
  const keys = newKeys(q);
  const addSha = (await load(client, readFileSync(new URL('./add.lua', import.meta.url), 'utf8'))).sha;
  const usedBefore = await usedMemory(control);
  for (let first = 0; first < n; first += ADD_CHUNK) {
    const count = Math.min(ADD_CHUNK, n - first);
    const jobs: NewJob[] = [];
    for (let i = first; i < first + count; i++) {
      const record = newRecord(Buffer.from(JSON.stringify(payload100(i))));
      jobs.push({ id: newId(layout === 'new' ? 14 : 22), record, delayMs: HOUR_MS });
    }
    await addNew(client, keys, addSha, jobs);
  }
  const usedAfter = await usedMemory(control);
  const names = [
    ['j', keys.j],
    ['s', keys.s],
    ['n', keys.n],
  ] as const;
  const perKey: Array<[string, number]> = [];
  for (const [name, key] of names) {
    const bytes = (await control.call('MEMORY', 'USAGE', key, 'SAMPLES', '0')) as number | null;
    perKey.push([name, (bytes ?? 0) / n]);
  }
  return { layout, perKey, usedPerJob: (usedAfter - usedBefore) / n };
}

const f = (x: number, digits = 2): string => x.toFixed(digits);

async function main(): Promise<void> {
  const server = await startRedis({ args: ['--appendonly', 'no'] });
  const control = new Redis(server.url);
  const client = new Redis(server.url);
  try {
    const version = /redis_version:(\S+)/.exec(await control.info('server'))?.[1] ?? '?';
    console.log(
      `redis ${version} on port ${server.port} (pid ${server.pid}); load average at start ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
    );
    await checkGuarantees(client, control);
    console.log(
      `jobs per run: ${JOBS} (B = 1: ${JOBS_C1}); memory: ${MEMORY_JOBS} jobs delayed 1 h, 100 B payload\n`,
    );
    console.log(
      '| variant | B | Redis CPU µs/job (claim+ack) | commands/job | script calls/job | jobs/s (one client) | add: CPU µs/job | add: commands/job |',
    );
    console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
    for (const batch of BATCHES) {
      for (const variant of VARIANTS) {
        const row = await runVariant(client, control, variant, batch, batch === 1 ? JOBS_C1 : JOBS);
        console.log(
          `| ${row.variant} | ${row.batch} | ${f(row.process.cpuUs)} | ${f(row.process.commands)} | ${f(row.process.scripts, 3)} | ${f(row.process.perSecond, 0)} | ${f(row.add.cpuUs)} | ${f(row.add.commands, 3)} |`,
        );
      }
    }
    console.log('\n| layout | MEMORY USAGE per job, by key | used_memory growth per job |');
    console.log('| --- | --- | ---: |');
    for (const layout of ['new, 22-char ids', 'new'] as const) {
      const row = await runMemory(client, control, layout, MEMORY_JOBS);
      const keysText = row.perKey.map(([k, b]) => `${k} ${f(b, 1)}`).join(', ');
      console.log(`| ${row.layout} | ${keysText} | ${f(row.usedPerJob, 1)} |`);
    }
    console.log(
      `\nload average at end ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
    );
  } finally {
    client.disconnect();
    control.disconnect();
    await server.stop();
  }
}

runMain(main);
