/**
 * The soak (`npm run soak`, not part of `npm test`): delayq under a steady rate of delayed jobs for
 * 20 minutes by default, with a share of failures and retries and a few worker SIGKILLs (each
 * killed worker replaced at once). Prints worker RSS and Redis used_memory at the start, every
 * minute and at the end, then checks from a ledger kept outside Redis (bench/lib/soak-ledger.ts)
 * that nothing was lost and nothing ran twice while its holder lived; exits 1 if either happened.
 *
 * Flags: --minutes N (20), --rate N jobs/s (500), --workers N (3), --concurrency N (16 per worker),
 * --kills N (one per 5 minutes, at least 1; never the first worker, whose RSS is followed from
 * start to end), --keep-ledger (keep the ledger directory even when the check passes),
 * --self-check (only run the checker on hand-made histories that each hold a known fault).
 *
 * Its own redis-server on a free port (never 6379); every process it starts is stopped by pid.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Queue, type BulkJob } from '../src/index.js';
import { sleep } from './lib/context.js';
import { runMain } from './lib/main.js';
import { startBenchRedis, usedMemory } from './lib/redis.js';
import { SELF_CHECK_CASES, selfCheck } from './lib/soak-self-check.js';
import {
  checkSoak,
  readSoakLedger,
  type SoakEntry,
  type SoakPayload,
  type SoakWorkerConfig,
  type SoakWorkerMessage,
} from './lib/soak-ledger.js';

const ENTRY = fileURLToPath(new URL('./processes/soak-worker.ts', import.meta.url));
const TICK_MS = 100;
/** Due times spread over this long after each add. */
const DELAY_MS = { min: 100, max: 2_000 };
/** Shares of jobs that fail their first attempt (then succeed) and that fail every attempt (end dead). */
const FAIL_ONCE = 0.02;
const FAIL_ALWAYS = 0.005;
const ATTEMPTS = 3;
const BACKOFF = { type: 'fixed', delay: 200 } as const;
/** How long the queue may take to drain after the producer stops: a killed holder's lease (15 s) and the reaper, with room. */
const DRAIN_BOUND_MS = 120_000;

/** A worker process and what it last reported. */
interface SoakWorker {
  index: number;
  process: ChildProcess;
  pid: number;
  ledger: string;
  stats: { completed: number; failed: number; dead: number };
  exited: Promise<void>;
}

const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

/** The resident set of a process, MiB, from /proc (null once it has gone). */
function rssMiB(pid: number): number | null {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) / 1024 : null;
  } catch {
    return null;
  }
}

const mib = (bytes: number): string => `${(bytes / 2 ** 20).toFixed(1)} MiB`;

async function startWorker(
  index: number,
  config: Omit<SoakWorkerConfig, 'ledger'>,
  dir: string,
): Promise<SoakWorker> {
  const ledger = join(dir, `worker-${index}-${Date.now()}.jsonl`);
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', ENTRY, JSON.stringify({ ...config, ledger } satisfies SoakWorkerConfig)],
    { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] },
  );
  live.add(child);
  const exited = new Promise<void>((resolve) =>
    child.once('exit', () => {
      live.delete(child);
      resolve();
    }),
  );
  const worker: SoakWorker = {
    index,
    process: child,
    pid: child.pid ?? -1,
    ledger,
    stats: { completed: 0, failed: 0, dead: 0 },
    exited,
  };
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`soak worker ${worker.pid} not ready within 120 s`)),
      120_000,
    );
    child.on('message', (message: SoakWorkerMessage) => {
      if (message.type === 'ready') {
        clearTimeout(timer);
        resolve();
      } else {
        worker.stats = { completed: message.completed, failed: message.failed, dead: message.dead };
      }
    });
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`soak worker ${worker.pid} exited before it was ready`));
    });
  });
  return worker;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      minutes: { type: 'string', default: '20' },
      rate: { type: 'string', default: '500' },
      workers: { type: 'string', default: '3' },
      concurrency: { type: 'string', default: '16' },
      kills: { type: 'string' },
      'keep-ledger': { type: 'boolean', default: false },
      'self-check': { type: 'boolean', default: false },
    },
  });
  if (values['self-check']) {
    const failures = selfCheck();
    for (const f of failures) console.log(`FAILED ${f}`);
    console.log(`soak self-check: ${SELF_CHECK_CASES - failures.length} passed, ${failures.length} failed`);
    if (failures.length > 0)
      throw new Error('the soak checker did not say what the hand-made histories hold');
    return;
  }
  const minutes = Number(values.minutes);
  const rate = Number(values.rate);
  const workerCount = Number(values.workers);
  const concurrency = Number(values.concurrency);
  const kills = values.kills === undefined ? Math.max(1, Math.round(minutes / 5)) : Number(values.kills);
  if (!(minutes > 0) || !(rate > 0) || !(workerCount >= 2) || !(concurrency >= 1) || !(kills >= 0)) {
    throw new Error('--minutes and --rate must be > 0, --workers >= 2, --concurrency >= 1, --kills >= 0');
  }
  const durationMs = minutes * 60_000;
  const dir = mkdtempSync(join(tmpdir(), 'delayq-soak-'));
  const redis = await startBenchRedis();
  const queueName = 'soak';
  const queue = new Queue<SoakPayload>(queueName, { connection: redis.url });
  const config = { url: redis.url, queue: queueName, concurrency };
  const workers: SoakWorker[] = [];
  const retired: SoakWorker[] = [];
  const killedAt = new Map<number, number>();
  const accepted = new Map<string, SoakPayload['k']>();
  const foundDead = new Set<string>();
  const t0 = Date.now();
  const log = (line: string): void => console.log(`[soak +${Math.round((Date.now() - t0) / 1000)}s] ${line}`);
  let ok = false;
  try {
    for (let i = 0; i < workerCount; i++) workers.push(await startWorker(i, config, dir));
    const rssLine = (): string =>
      workers
        .map(
          (w) =>
            `${w.index === 0 ? 'w0 (never killed)' : `w${w.index}`} ${rssMiB(w.pid)?.toFixed(1) ?? '?'} MiB`,
        )
        .join(', ');
    const memory0 = await usedMemory(redis.control);
    const rss0 = rssMiB(workers[0]!.pid);
    console.log(
      `soak: ${minutes} min at ${rate} delayed jobs/s (due ${DELAY_MS.min}-${DELAY_MS.max} ms after add; ` +
        `${FAIL_ONCE * 100} % fail once, ${FAIL_ALWAYS * 100} % always), ${workerCount} workers x ${concurrency}, ` +
        `${kills} SIGKILL(s); Redis ${redis.url}; ledger ${dir}; load ${loadavg()[0]!.toFixed(2)}`,
    );
    log(`start: Redis used_memory ${mib(memory0)}; worker RSS ${rssLine()}`);

    // Housekeeping an application would do: dead jobs are noted (in the ledger kept here) and removed,
    // so the dead set does not grow for the whole run.
    const sweepDead = async (): Promise<void> => {
      for (;;) {
        const page = await queue.dead.list({ offset: 0, limit: 500 });
        if (page.length === 0) return;
        for (const job of page) {
          foundDead.add(job.id);
          await queue.dead.remove(job.id);
        }
      }
    };
    const killPlan = Array.from({ length: kills }, (_, k) => t0 + ((k + 0.5) / kills) * durationMs);
    let nextKill = 0;
    const replacements: Array<Promise<void>> = [];
    const replaceErrors: string[] = [];
    let nextMinute = t0 + 60_000;
    const perTick = Math.max(1, Math.round((rate * TICK_MS) / 1000));
    let n = 0;
    let addErrors = 0;
    const byMinute: Array<{ memory: number; rss: number | null }> = [];
    for (let k = 0; ; k++) {
      const slot = t0 + k * TICK_MS;
      if (slot >= t0 + durationMs) break;
      const wait = slot - Date.now();
      // The arrival schedule itself, not a guess at a condition.
      if (wait > 0) await sleep(wait);
      const batch: Array<BulkJob<SoakPayload>> = [];
      for (let j = 0; j < perTick; j++, n++) {
        const r = Math.random();
        const kind: SoakPayload['k'] =
          r < FAIL_ALWAYS ? 'always' : r < FAIL_ALWAYS + FAIL_ONCE ? 'once' : 'ok';
        const delay = DELAY_MS.min + Math.floor(Math.random() * (DELAY_MS.max - DELAY_MS.min));
        batch.push({
          payload: { k: kind, ms: Math.floor(Math.random() * 5) },
          opts: { id: `j${n}`, delay, attempts: ATTEMPTS, backoff: BACKOFF },
        });
      }
      try {
        const results = await queue.addBulk(batch);
        results.forEach((r, j) => accepted.set(r.id, batch[j]!.payload.k));
      } catch (err) {
        // Not accepted, so not owed: counted and shown, not checked.
        addErrors++;
        log(`addBulk failed: ${err instanceof Error ? err.message : String(err)}`);
      }
      if (nextKill < killPlan.length && Date.now() >= killPlan[nextKill]!) {
        nextKill++;
        const at = 1 + Math.floor(Math.random() * (workers.length - 1));
        const victim = workers[at]!;
        victim.process.kill('SIGKILL');
        killedAt.set(victim.pid, Date.now());
        retired.push(victim);
        log(`SIGKILLed worker w${victim.index} (pid ${victim.pid})`);
        // Replaced in the background: the producer must not stall while the new process starts.
        replacements.push(
          victim.exited
            .then(() => startWorker(victim.index, config, dir))
            .then((replacement) => {
              workers[at] = replacement;
              log(`w${victim.index} replaced by pid ${replacement.pid}`);
            })
            .catch((err: unknown) => {
              replaceErrors.push(err instanceof Error ? err.message : String(err));
            }),
        );
      }
      if (Date.now() >= nextMinute) {
        nextMinute += 60_000;
        await sweepDead();
        const counts = await queue.counts();
        const memory = await usedMemory(redis.control);
        byMinute.push({ memory, rss: rssMiB(workers[0]!.pid) });
        // A killed worker stays in `workers` until its replacement is ready: count each process once.
        const done = [...new Set([...workers, ...retired])].reduce((s, w) => s + w.stats.completed, 0);
        log(
          `accepted ${accepted.size}, completed ~${done} (workers' last reports), scheduled ${counts.scheduled}, ` +
            `due ${counts.due}, active ${counts.active}, dead removed ${foundDead.size}; ` +
            `Redis used_memory ${mib(memory)}; worker RSS ${rssLine()}; load ${loadavg()[0]!.toFixed(2)}`,
        );
      }
    }
    await Promise.all(replacements);
    if (replaceErrors.length > 0)
      throw new Error(`a killed worker was not replaced: ${replaceErrors.join('; ')}`);
    const memoryLoaded = await usedMemory(redis.control);
    const rssLoaded = rssMiB(workers[0]!.pid);
    log(`producer stopped: Redis used_memory ${mib(memoryLoaded)} under load; worker RSS ${rssLine()}`);

    // Drain: wait (bounded) until nothing is scheduled, due or active.
    const drainUntil = Date.now() + DRAIN_BOUND_MS;
    let left = Infinity;
    while (Date.now() < drainUntil) {
      const c = await queue.counts();
      left = c.scheduled + c.active; // due jobs are counted in scheduled too
      if (left === 0) break;
      await sleep(500);
    }
    await sweepDead();
    const memoryEnd = await usedMemory(redis.control);
    const rssEnd = rssMiB(workers[0]!.pid);
    log(
      `end (drained${left === 0 ? '' : `: NOT, ${left} left after ${DRAIN_BOUND_MS / 1000} s`}): Redis used_memory ${mib(memoryEnd)}; worker RSS ${rssLine()}`,
    );

    const unfinished = new Set<string>();
    if (left > 0) {
      for (const state of ['scheduled', 'active'] as const) {
        for (let offset = 0; ; offset += 1000) {
          const page = await queue.list(state, { offset, limit: 1000 });
          for (const job of page) unfinished.add(job.id);
          if (page.length < 1000) break;
        }
      }
    }
    await Promise.all(
      workers.map(async (w) => {
        w.process.send({ type: 'close' });
        const timer = setTimeout(() => w.process.kill('SIGKILL'), 10_000);
        await w.exited;
        clearTimeout(timer);
      }),
    );
    const ledgers = new Map<number, SoakEntry[]>();
    for (const w of [...retired, ...workers]) ledgers.set(w.pid, await readSoakLedger(w.ledger));
    const report = checkSoak({ accepted, ledgers, killedAt, foundDead, unfinished });

    console.log('\nsoak summary');
    console.log(
      `  ran ${minutes} min at ${rate} jobs/s offered; load average now ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
    );
    console.log(
      `  Redis used_memory: start ${mib(memory0)}; by minute ${byMinute.map((m) => (m.memory / 2 ** 20).toFixed(1)).join(', ') || '–'} MiB; ` +
        `end of load ${mib(memoryLoaded)}, drained ${mib(memoryEnd)}`,
    );
    console.log(
      `  RSS of w0 (never killed): start ${rss0?.toFixed(1)}; by minute ${byMinute.map((m) => m.rss?.toFixed(1) ?? '?').join(', ') || '–'} MiB; ` +
        `end of load ${rssLoaded?.toFixed(1)}, drained ${rssEnd?.toFixed(1)} MiB`,
    );
    console.log(
      `  (delayq remembers completed ids, 100,000 for 5 min by default: at ${rate} jobs/s that set fills in ` +
        `${Math.round(Math.min(100_000 / rate, 300))} s, expect used_memory to grow until then: compare the minutes after it)`,
    );
    console.log(
      `  accepted ${report.accepted} (add calls failed: ${addErrors}), completed ${report.completed}, dead ${report.dead} ` +
        `(expected about ${Math.round(report.accepted * FAIL_ALWAYS)}), completed with the reply lost in a kill ${report.completedReplyLost}, ` +
        `handler runs ${report.runs}, SIGKILLs ${killedAt.size}`,
    );
    console.log(
      `  lost ${report.lost}, ran twice while its holder lived ${report.ranTwiceWhileHolderLived}, ` +
        `unexpected outcome ${report.unexpectedOutcome}, left in Redis ${unfinished.size}`,
    );
    for (const e of report.examples) console.log(`  ${e}`);
    ok =
      report.lost === 0 &&
      report.ranTwiceWhileHolderLived === 0 &&
      report.unexpectedOutcome === 0 &&
      left === 0;
    console.log(ok ? 'soak: OK' : 'soak: FAILED');
  } finally {
    for (const w of workers) w.process.kill('SIGKILL');
    await queue.close().catch(() => {});
    await redis.stop();
    if (ok && !values['keep-ledger']) rmSync(dir, { recursive: true, force: true });
    else console.log(`ledger kept in ${dir}`);
  }
  if (!ok) throw new Error('soak failed: see the summary above');
}

runMain(main);
