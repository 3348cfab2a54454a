/**
 * A delayq Worker in its own process for the chaos suite. Run with
 * `node --import tsx test/chaos/chaos-worker.ts '<json ChaosWorkerConfig>'`; spawned by
 * worker-handle.ts. Adapted from test/support/worker-process.ts, with what the checker needs:
 *
 * - The lease token of every run. The public Job does not expose it, so the worker is given its
 *   own ioredis client and every script reply is read on the way back (claims, extends, and the
 *   outcome of every ack, fail and release, with the lease member it was sent with, whose token
 *   "<claims>.<claimed at>" names the run). Nothing is changed.
 * - Handlers driven by the payload (ChaosPayload): sleep, fail, crash the process, block the loop.
 *
 * Every line goes to the ledger with appendFileSync, so a SIGKILL loses nothing already written.
 * Prints `ready {"pid":..,"workerId":..}` once claiming. On SIGTERM or SIGINT it closes the worker
 * (in-flight jobs finish or are released within closeTimeoutMs) and exits 0.
 */
import { appendFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { Worker, type Job } from '../../src/index.js';
import { parseLeaseMember } from '../../src/members/lease.js';
import { ackOutcomeOf } from '../../src/operations/claim.js';
import { decodeRecord } from '../../src/record/index.js';
import { functionLibrary, script } from '../../src/redis/scripts.js';
import { DELIBERATE, type CallOutcome, type ChaosEntry, type ChaosPayload } from './ledger.js';

/** What the parent passes in argv[2] (JSON). */
export interface ChaosWorkerConfig {
  url: string;
  queue: string;
  ledger: string;
  concurrency: number;
  leaseMs: number;
  /** How long close() waits for running handlers on SIGTERM before releasing their jobs. */
  closeTimeoutMs: number;
  /** Set on every connection of this process, so CLIENT KILL can find them. */
  connectionName: string;
  maxSleepMs?: number;
  reapIntervalMs?: number;
  /** groups.concurrency, when the run adds grouped jobs. */
  groupConcurrency?: number;
}

const config = JSON.parse(process.argv[2] ?? '') as ChaosWorkerConfig;
const pid = process.pid;

function record(entry: ChaosEntry): void {
  appendFileSync(config.ledger, `${JSON.stringify(entry)}\n`);
}

// --- Reading script replies -------------------------------------------------------------------

const scriptsDir = fileURLToPath(new URL('../../src/scripts/', import.meta.url));
const names = readdirSync(scriptsDir)
  .filter((f) => f.endsWith('.lua'))
  .map((f) => f.slice(0, -4));
const bySha = new Map(names.map((n) => [script(n).sha, n]));
const bySource = new Map(names.map((n) => [script(n).source, n]));
const byFunction = new Map([...functionLibrary().functions].map(([n, fn]) => [fn, n]));

function text(value: unknown): string {
  return Buffer.isBuffer(value) ? value.toString() : String(value);
}

/** The token of this process's latest claim of each job id. */
const latestToken = new Map<string, string>();

function outcomeOf(err: unknown): CallOutcome | null {
  const message = err instanceof Error ? err.message : String(err);
  if (message.startsWith('NOSCRIPT')) return null; // runScript sends EVAL next; that one counts
  const lost = /^DELAYQ_LEASE_LOST\s*(.*)$/s.exec(message);
  return lost ? `refused: ${lost[1] ?? ''}` : `error: ${message.slice(0, 200)}`;
}

/** A lease member's id and token (src/members/lease.ts). */
function splitMember(member: string): { id: string; token: string } {
  const { id, token } = parseLeaseMember(member);
  return { token, id };
}

// claim.lua's ARGV (src/operations/claim.ts): limit, lease ms, holder, 3 group settings, rate max
// and per, dead count and age, flags, events cap, then M, then 4 per ack (member, known deadline,
// flags, result). Its reply: now, next_at, paused, the ack outcomes as one string (a letter per ack:
// O ok, A already, C/E/N lost: cancelled, expired, not held), n, then 3 per job (member, record,
// due); a job's token is its member up to the '|'.
const CLAIM_LEASE_MS = 1;
const CLAIM_ACK_COUNT = 12;
const CLAIM_FIELDS_PER_ACK = 4;
const CLAIM_FIELDS_PER_JOB = 3;

function observe(name: string, argv: string[], reply: unknown, err: unknown, resent: boolean): void {
  const at = Date.now();
  if (name === 'claim') {
    // The acks a claim carries: one outcome each, a letter each in the reply's one string.
    const ackCount = Number(argv[CLAIM_ACK_COUNT]);
    const failed = err === undefined ? null : outcomeOf(err);
    if (err !== undefined && failed === null) return;
    const letters = failed === null ? text((reply as unknown[])[3]) : '';
    for (let n = 0; n < ackCount; n++) {
      const { id, token } = splitMember(argv[CLAIM_ACK_COUNT + 1 + n * CLAIM_FIELDS_PER_ACK]!);
      let outcome: CallOutcome;
      if (failed !== null) {
        outcome = failed;
      } else {
        const letter = letters.charAt(n);
        const told = ackOutcomeOf(letter);
        outcome = !told
          ? `refused: unknown outcome ${letter}`
          : told.status === 'lost'
            ? `refused: ${told.detail}`
            : told.status;
      }
      record({ phase: 'ack', pid, id, token, outcome, at, resent });
    }
    if (err !== undefined || !Array.isArray(reply)) return;
    const r = reply as unknown[];
    const countAt = 4;
    const count = Number(text(r[countAt]));
    const jobs: Array<{ id: string; token: string; attempt: number; runAt: number }> = [];
    for (let i = 0; i < count; i++) {
      const base = countAt + 1 + i * CLAIM_FIELDS_PER_JOB;
      const { id, token } = splitMember(text(r[base]));
      // The record as leased: its claim block holds this attempt's number.
      const raw = r[base + 1];
      let attempt = 0;
      try {
        attempt = decodeRecord(Buffer.isBuffer(raw) ? raw : Buffer.from(text(raw))).header.attempts;
      } catch {
        // An unreadable record: the worker buries it; attempt 0 says the ledger could not tell.
      }
      jobs.push({ id, token, attempt, runAt: Number(text(r[base + 2])) });
      latestToken.set(id, token);
    }
    if (jobs.length > 0) {
      record({
        phase: 'claim',
        pid,
        at,
        now: Number(text(r[0])),
        leaseMs: Number(argv[CLAIM_LEASE_MS]),
        jobs,
      });
    }
    return;
  }
  if (name === 'extend') {
    // ARGV: lease ms, flags, then members; reply: now, then the new deadline (0: lost) per member.
    if (err !== undefined || !Array.isArray(reply)) return;
    const r = reply as unknown[];
    const leases = argv.slice(2).map((member, i) => ({
      ...splitMember(member),
      deadline: Number(text(r[i + 1])),
    }));
    record({ phase: 'extend', pid, at, now: Number(text(r[0])), leases });
    return;
  }
  if (name === 'fail' || name === 'release') {
    // ARGV[1] is the lease member for both.
    let outcome: CallOutcome | null;
    if (err !== undefined) {
      outcome = outcomeOf(err);
    } else if (name === 'fail') {
      const kind = Array.isArray(reply) ? text(reply[0]) : '';
      outcome = kind === 'RETRY' ? 'retry' : kind === 'DEAD' ? 'dead' : 'already';
    } else {
      outcome = reply === 1 ? 'released' : 'not-released';
    }
    if (outcome !== null) record({ phase: name, pid, ...splitMember(argv[0]!), outcome, at, resent });
  }
}

type CallBuffer = (command: string, ...args: unknown[]) => Promise<unknown>;

const client = new Redis(config.url, { maxRetriesPerRequest: null, connectionName: config.connectionName });
client.on('error', () => {
  // Reconnects are the point of the exercise; the worker reports failed commands itself.
});
// ioredis resends commands that were in flight when a connection dropped: such a call may have
// been applied twice (the second copy then sees the first one's effect).
let closes = 0;
client.on('close', () => closes++);
const noscript = new Map<string, number>();
const send = client.callBuffer.bind(client) as unknown as CallBuffer;
(client as unknown as { callBuffer: CallBuffer }).callBuffer = async (command, ...args) => {
  const upper = command.toUpperCase();
  const name =
    upper === 'EVALSHA'
      ? bySha.get(text(args[0]))
      : upper === 'EVAL'
        ? bySource.get(text(args[0]))
        : upper === 'FCALL'
          ? byFunction.get(text(args[0]))
          : undefined;
  if (name === undefined) return send(command, ...args);
  const argv = args.slice(2 + Number(text(args[1]))).map(text);
  // After a Redis restart a resent EVALSHA meets an empty script cache: NOSCRIPT, and runScript
  // sends EVAL next (an FCALL meets "Function not found", and the FCALL sent again after loading
  // the library, or the EVALSHA after it). That call belongs to the first one, and so does whether
  // it was resent.
  const key = `${name}\u0000${argv.join('\u0000')}`;
  const closesBefore = noscript.get(key) ?? closes;
  noscript.delete(key);
  try {
    const reply = await send(command, ...args);
    observe(name, argv, reply, undefined, closes !== closesBefore);
    return reply;
  } catch (err) {
    if (err instanceof Error && /^(NOSCRIPT|ERR Function not found)/.test(err.message)) {
      noscript.set(key, closesBefore);
    }
    observe(name, argv, undefined, err, closes !== closesBefore);
    throw err;
  }
};

// --- The worker --------------------------------------------------------------------------------

const tokenOf = new WeakMap<Job<ChaosPayload>, string>();

const worker = new Worker<ChaosPayload>(
  config.queue,
  async (job) => {
    const token = latestToken.get(job.id) ?? '?';
    tokenOf.set(job, token);
    const start = Date.now();
    record({
      phase: 'start',
      pid,
      id: job.id,
      token,
      attempt: job.attempt,
      start,
      startNow: job.claimedAt.getTime(),
    });
    const p = job.payload;
    if (p.flowChildren !== undefined) {
      // A parent runs only after every child completed: each child's result is there.
      const found = Object.keys(await job.childResults()).length;
      record({ phase: 'flow', pid, id: job.id, token, found, children: p.flowChildren, at: Date.now() });
    }
    if (p.crash) {
      process.kill(pid, 'SIGKILL');
      await new Promise(() => {});
    }
    if (p.blockMs) {
      const until = Date.now() + p.blockMs;
      while (Date.now() < until) {
        // Blocking the event loop on purpose: no lease renewal can run meanwhile.
      }
    }
    // Ignores job.signal on purpose: a handler that runs on after losing its lease is the case
    // fencing must handle.
    if (p.ms > 0) await new Promise((resolve) => setTimeout(resolve, p.ms));
    record({ phase: 'end', pid, id: job.id, token, attempt: job.attempt, start, end: Date.now() });
    if (p.failAlways || (p.failOnce && job.attempt === 1)) throw new Error(DELIBERATE);
  },
  {
    connection: client,
    concurrency: config.concurrency,
    leaseMs: config.leaseMs,
    backoff: { type: 'fixed', delay: 50 },
    // Completed records are the checker's proof of each completion: none is trimmed during a run.
    rememberCompleted: { count: 10_000_000, age: '7d' },
    ...(config.maxSleepMs !== undefined && { maxSleepMs: config.maxSleepMs }),
    ...(config.reapIntervalMs !== undefined && { reapIntervalMs: config.reapIntervalMs }),
    ...(config.groupConcurrency !== undefined && { groups: { concurrency: config.groupConcurrency } }),
  },
);

for (const event of ['completed', 'failed', 'dead'] as const) {
  worker.on(event, (job: Job<ChaosPayload> | null, ...rest: unknown[]) => {
    const err = event === 'completed' ? undefined : (rest[0] as Error);
    const id = job?.id ?? (event === 'dead' ? String(rest[1]) : null);
    record({ phase: 'event', pid, event, id, message: err?.message ?? '', at: Date.now() });
  });
}
worker.on('error', (err) => {
  const { jobId } = err as Error & { jobId?: unknown };
  record({
    phase: 'event',
    pid,
    event: 'error',
    id: typeof jobId === 'string' ? jobId : null,
    message: err.message.slice(0, 300),
    at: Date.now(),
  });
});

let closing = false;
function shutDown(): void {
  if (closing) return;
  closing = true;
  worker
    .close({ timeoutMs: config.closeTimeoutMs })
    .then(async () => {
      record({ phase: 'exit', pid, at: Date.now(), how: 'closed' });
      await client.quit().catch(() => client.disconnect());
      process.exit(0);
    })
    .catch((err: unknown) => {
      console.error('chaos-worker: close failed', err);
      process.exit(1);
    });
}
process.on('SIGTERM', shutDown);
process.on('SIGINT', shutDown);

try {
  await worker.waitUntilReady();
} catch (err) {
  console.error('chaos-worker: the worker did not start', err);
  process.exit(1);
}
process.stdout.write(`ready ${JSON.stringify({ pid, workerId: worker.id })}\n`);
