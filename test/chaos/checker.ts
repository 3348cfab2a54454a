/**
 * The chaos checker: from what the producer had accepted, the workers' ledgers, the faults that
 * were injected and the final Redis state, prove DESIGN section 2 or say exactly where it broke.
 *
 * - Nothing lost: every accepted job completed (an ack applied) or is dead with a reason. Given the
 *   completed set at the end (layout 2 keeps a completed record per job), Redis itself says which
 *   jobs completed: an applied ack must have left one, and a completion whose ack reply never came
 *   back is proven by it rather than inferred.
 * - One holder: by the Redis clock, no claim of a job came before the previous holder's lease
 *   (as last confirmed to it) ran out, unless that holder had handed it back (fail, release).
 * - Fencing: at most one ack per job is applied; every other ack is refused. A second applied ack
 *   for a job that had completed and been added again (same id, started afresh) is reported on its
 *   own: the producer's add was applied twice, which is no fencing breach but still a double run.
 * - Never early: no handler start before the job's due time: by the local clock (one machine: the
 *   Redis clock too), and by the worker's own bound of the Redis clock (job.claimedAt). A lease
 *   may start up to CLAIM_AHEAD_MS before it (claim ahead), never further.
 * - Duplicates (a job run again without a deliberate failure before) and handler runs that overlap
 *   in time only where the earlier holder was hit by a fault (killed, stopped, cut off, restarted).
 *
 * Pure: no I/O, so chaos.test.ts can feed it hand-made histories that each break one rule.
 */
import { decodeRecord } from '../../src/record/index.js';
import { CLAIM_AHEAD_MS } from '../../src/worker/start-gate.js';
import type { CallOutcome, ChaosEntry } from './ledger.js';

/**
 * Whether `record` is a completed record (it keeps the claim block and max attempts of its last
 * run: finalRecord), as an applied ack leaves it. An unreadable record is not.
 */
export function isCompletedRecord(record: Buffer | null | undefined): boolean {
  if (!record) return false;
  try {
    return decodeRecord(record).header.completed;
  } catch {
    return false;
  }
}

/** The kinds of fault the runner injects; 'crash' is a process that died on its own. */
export type FaultKind =
  'kill' | 'stop' | 'term' | 'client-kill' | 'stall' | 'reset' | 'redis-restart' | 'crash';

/** One injected fault: what, when (local ms), for how long, whom. */
export interface FaultRecord {
  kind: FaultKind;
  at: number;
  until: number;
  pids: number[] | 'all';
}

/** How an accepted job was meant to end. */
export type JobKind = 'normal' | 'failOnce' | 'failAlways' | 'poison';

/** Everything the checker reads. */
export interface CheckInput {
  /** Accepted (add resolved) job ids and what they were asked to do. */
  accepted: ReadonlyMap<string, JobKind>;
  /** Every worker's ledger, concatenated. */
  entries: readonly ChaosEntry[];
  faults: readonly FaultRecord[];
  /** When each worker process exited (local ms). */
  exits: ReadonlyMap<number, number>;
  /** The dead set at the end: id -> recorded reason ('' when none). */
  dead: ReadonlyMap<string, string>;
  /** Ids still scheduled or active at the end (a drained queue has none). */
  unfinished: readonly string[];
  /**
   * Ids with a completed record at the end (the `c` set), when the run kept every one (no
   * retention trim). Absent: completions are inferred from the ledgers alone.
   */
  completed?: ReadonlySet<string>;
  /** How long after a fault its effects may still show (reconnects, resent commands). */
  lingerMs: number;
}

/** The checker's counts. */
export interface ChaosCounts {
  accepted: number;
  completed: number;
  /** Completed by an ack whose reply never came back: resent and then refused, or its process killed. */
  completedReplyLost: number;
  dead: number;
  lost: number;
  unfinished: number;
  runs: number;
  /** Extra runs of a job not preceded by a deliberate failure. */
  duplicates: number;
  duplicatesUnexplained: number;
  /** Pairs of runs of one job that overlapped in time. */
  concurrentDoubleRuns: number;
  concurrentUnexplained: number;
  staleAcksRefused: number;
  staleAcksApplied: number;
  /** Jobs run again as a new job under the same id after they had completed. */
  recreatedAfterCompletion: number;
  leaseOverlaps: number;
  /** Leases that began more than CLAIM_AHEAD_MS before the due time. */
  earlyClaims: number;
  /** Handlers started before the due time. */
  earlyStarts: number;
  unexpectedDead: number;
}

/** The verdict: counts, and every broken rule with examples. */
export interface ChaosReport {
  ok: boolean;
  counts: ChaosCounts;
  violations: string[];
}

interface Run {
  pid: number;
  id: string;
  token: string;
  attempt: number;
  claimAt?: number;
  claimNow?: number;
  runAt?: number;
  /** Latest deadline the holder was told (claim, then extends). */
  deadline?: number;
  start?: number;
  /** The start by the worker's bound of the Redis clock (job.claimedAt). */
  startNow?: number;
  end?: number;
  settles: Array<{ phase: 'ack' | 'fail' | 'release'; outcome: CallOutcome; at: number; resent: boolean }>;
}

const EXAMPLES = 5;

function affects(fault: FaultRecord, pid: number): boolean {
  return fault.pids === 'all' || fault.pids.includes(pid);
}

/** Check a chaos run. */
export function checkChaos(input: CheckInput): ChaosReport {
  const violations: string[] = [];
  const flag = (rule: string, examples: string[]): void => {
    if (examples.length > 0) {
      violations.push(`${rule}: ${examples.length} (e.g. ${examples.slice(0, EXAMPLES).join('; ')})`);
    }
  };

  // --- Runs, keyed by pid, job and token ------------------------------------------------------
  const runs = new Map<string, Run>();
  const runOf = (pid: number, id: string, token: string, attempt = 0): Run => {
    const key = `${pid}\u0000${id}\u0000${token}`;
    let run = runs.get(key);
    if (!run) {
      run = { pid, id, token, attempt, settles: [] };
      runs.set(key, run);
    }
    return run;
  };
  const earlyClaims: string[] = [];
  for (const e of input.entries) {
    switch (e.phase) {
      case 'claim':
        for (const job of e.jobs) {
          const run = runOf(e.pid, job.id, job.token, job.attempt);
          run.claimAt = e.at;
          run.claimNow = e.now;
          run.runAt = job.runAt;
          run.deadline = Math.max(run.deadline ?? 0, e.now + e.leaseMs);
          if (e.now < job.runAt - CLAIM_AHEAD_MS)
            earlyClaims.push(`${job.id}#${job.token} claimed at ${e.now}, due ${job.runAt}`);
        }
        break;
      case 'extend':
        for (const lease of e.leases) {
          if (lease.deadline > 0) {
            const run = runOf(e.pid, lease.id, lease.token);
            run.deadline = Math.max(run.deadline ?? 0, lease.deadline);
          }
        }
        break;
      case 'start': {
        const run = runOf(e.pid, e.id, e.token, e.attempt);
        run.attempt = e.attempt;
        run.start = e.start;
        run.startNow = e.startNow;
        break;
      }
      case 'end':
        runOf(e.pid, e.id, e.token, e.attempt).end = e.end;
        break;
      case 'ack':
      case 'fail':
      case 'release':
        runOf(e.pid, e.id, e.token).settles.push({
          phase: e.phase,
          outcome: e.outcome,
          at: e.at,
          resent: e.resent,
        });
        break;
      default:
        break;
    }
  }
  const byJob = new Map<string, Run[]>();
  for (const run of runs.values()) {
    const list = byJob.get(run.id) ?? [];
    list.push(run);
    byJob.set(run.id, list);
  }
  // Tokens are "<claims>.<claim time>": the job's claim count orders its runs.
  const counter = (token: string): number => Number.parseInt(token, 10);
  const tokenOrder = (a: Run, b: Run): number =>
    counter(a.token) - counter(b.token) || a.token.localeCompare(b.token);

  /** Was the run's process hit by a fault while it held or ran the job? */
  const disturbed = (run: Run): FaultKind | null => {
    const from = run.claimAt ?? run.start ?? -Infinity;
    const lastSettle = run.settles.reduce((max, s) => Math.max(max, s.at), -Infinity);
    // Until its result was settled; unsettled, it held the lease until its process ended.
    const to = Number.isFinite(lastSettle) ? lastSettle : (input.exits.get(run.pid) ?? Infinity);
    for (const fault of input.faults) {
      if (!affects(fault, run.pid)) continue;
      if (fault.at <= to && fault.until + input.lingerMs >= from) return fault.kind;
    }
    return null;
  };

  /** Did process `pid` die abruptly (SIGKILL, crash) at or after `t`? */
  const killedAfter = (pid: number, t: number): boolean =>
    input.faults.some((f) => (f.kind === 'kill' || f.kind === 'crash') && affects(f, pid) && f.until >= t);

  // --- Fencing: applied acks ------------------------------------------------------------------
  const completing = new Map<string, Run[]>();
  let staleAcksRefused = 0;
  for (const run of runs.values()) {
    for (const s of run.settles) {
      if (s.phase !== 'ack') continue;
      if (s.outcome === 'ok' || s.outcome === 'already') {
        const list = completing.get(run.id) ?? [];
        if (!list.includes(run)) list.push(run);
        completing.set(run.id, list);
      } else if (s.outcome.startsWith('refused')) {
        staleAcksRefused++;
      }
    }
  }
  // Two applied acks of one job: a stale ack applied (fencing broken), unless the second is of a
  // new job under the same id, started afresh (attempt 1) after the first had completed: the add
  // was applied again after the job was gone.
  const staleApplied: string[] = [];
  const recreated: string[] = [];
  const ackedAt = (run: Run): number =>
    Math.min(
      ...run.settles
        .filter((s) => s.phase === 'ack' && (s.outcome === 'ok' || s.outcome === 'already'))
        .map((s) => s.at),
    );
  for (const [id, list] of completing) {
    const sorted = [...list].sort(tokenOrder);
    for (let i = 1; i < sorted.length; i++) {
      const a = sorted[i - 1]!;
      const b = sorted[i]!;
      const what = `${id} by #${a.token} (pid ${a.pid}) and #${b.token} (pid ${b.pid})`;
      // A fresh start (attempt 1) after `a` completed and by the time `b` was claimed.
      const fresh = (byJob.get(id) ?? []).some(
        (r) =>
          r.attempt === 1 &&
          r.claimAt !== undefined &&
          r.claimAt > ackedAt(a) &&
          r.claimAt <= (b.claimAt ?? Infinity),
      );
      if (fresh) recreated.push(what);
      else staleApplied.push(what);
    }
  }
  flag('jobs completed by two different leases (a stale ack was applied)', staleApplied);
  flag(
    'jobs run again after they had completed (the add was applied again: resent after a lost reply)',
    recreated,
  );

  // --- Nothing lost ---------------------------------------------------------------------------
  const unfinished = new Set(input.unfinished);
  let completed = 0;
  let completedReplyLost = 0;
  let deadCount = 0;
  const lost: string[] = [];
  const unexpectedDead: string[] = [];
  const deadWithoutReason: string[] = [];
  const recorded = input.completed;
  for (const [id, kind] of input.accepted) {
    if (recorded !== undefined) {
      if (completing.has(id) && !recorded.has(id) && !input.dead.has(id)) {
        lost.push(`${id} (${kind}) was acked but has no completed record`);
        continue;
      }
      if (recorded.has(id)) {
        completed++;
        if (!completing.has(id)) completedReplyLost++;
        if (input.dead.has(id)) lost.push(`${id} is both completed and dead`);
        continue;
      }
    }
    if (completing.has(id)) {
      completed++;
      if (input.dead.has(id)) lost.push(`${id} is both completed and dead`);
      continue;
    }
    const reason = input.dead.get(id);
    if (reason !== undefined) {
      deadCount++;
      if (reason === '') deadWithoutReason.push(id);
      if (kind !== 'failAlways' && kind !== 'poison') unexpectedDead.push(`${id} (${kind}): ${reason}`);
      continue;
    }
    if (unfinished.has(id)) continue;
    if (recorded !== undefined) {
      lost.push(`${id} (${kind}, ${(byJob.get(id) ?? []).filter((r) => r.start !== undefined).length} runs)`);
      continue;
    }
    // Gone from Redis with no applied ack in any ledger. Two cases are not a loss: an ack applied
    // whose reply was lost (ioredis resent it and the second copy was refused), and an ack sent
    // by a process killed before the reply came (its handler ended; nothing settled it after).
    const replyLost = (byJob.get(id) ?? []).some(
      (run) =>
        run.settles.some((s) => s.phase === 'ack' && s.resent && s.outcome === 'refused: not held') ||
        (run.end !== undefined && run.settles.length === 0 && killedAfter(run.pid, run.end)),
    );
    if (replyLost) {
      completed++;
      completedReplyLost++;
      continue;
    }
    lost.push(`${id} (${kind}, ${(byJob.get(id) ?? []).filter((r) => r.start !== undefined).length} runs)`);
  }
  flag('accepted jobs lost (neither completed nor dead)', lost);
  flag(
    'accepted jobs never finished (still scheduled or active)',
    [...unfinished].filter((id) => input.accepted.has(id)),
  );
  flag('dead jobs without a recorded reason', deadWithoutReason);
  flag('jobs dead that should have completed', unexpectedDead);
  flag(`claims more than ${CLAIM_AHEAD_MS} ms before the due time (Redis clock)`, earlyClaims);
  const earlyStarts: string[] = [];
  for (const run of runs.values()) {
    if (run.runAt === undefined || run.start === undefined) continue;
    if (run.start < run.runAt || (run.startNow ?? run.runAt) < run.runAt) {
      earlyStarts.push(
        `${run.id}#${run.token} started at ${run.start} (${run.startNow} by its worker), due ${run.runAt}`,
      );
    }
  }
  flag('handlers started before the due time', earlyStarts);

  // --- One holder, by the Redis clock ---------------------------------------------------------
  const overlaps: string[] = [];
  for (const [id, list] of byJob) {
    const claims = list.filter((r) => r.claimNow !== undefined).sort(tokenOrder);
    for (let i = 1; i < claims.length; i++) {
      const prev = claims[i - 1]!;
      const next = claims[i]!;
      // The holder may have handed the job back early (fail, release): then a claim before its
      // deadline is right. Also when that call may have been applied without its reply reaching
      // the ledger: resent after a dropped connection, or in flight when the process was killed.
      const kind = input.accepted.get(id);
      const meantToFail = kind === 'failAlways' || (kind === 'failOnce' && prev.attempt === 1);
      const handedBack =
        prev.settles.some(
          (s) =>
            (s.phase === 'fail' &&
              (s.outcome === 'retry' || s.outcome === 'dead' || s.outcome === 'already')) ||
            (s.phase === 'release' && s.outcome === 'released') ||
            // Completed, and the next claim (attempt 1) is of a new job under the same id.
            (s.phase === 'ack' && (s.outcome === 'ok' || s.outcome === 'already') && next.attempt === 1) ||
            (s.phase !== 'ack' && s.resent),
        ) ||
        (meantToFail && prev.end !== undefined && prev.settles.length === 0);
      if (handedBack) continue;
      if (next.claimNow! < prev.deadline!) {
        overlaps.push(
          `${id}: #${next.token} claimed at ${next.claimNow} while #${prev.token} held it until ${prev.deadline}`,
        );
      }
    }
  }
  flag('two valid leases on one job (Redis clock)', overlaps);

  // --- Duplicates and overlapping runs --------------------------------------------------------
  let duplicates = 0;
  const unexplainedDuplicates: string[] = [];
  let concurrent = 0;
  const unexplainedConcurrent: string[] = [];
  let runCount = 0;
  for (const [id, list] of byJob) {
    const started = list.filter((r) => r.start !== undefined).sort(tokenOrder);
    runCount += started.length;
    for (let i = 1; i < started.length; i++) {
      const prev = started[i - 1]!;
      const next = started[i]!;
      const deliberate = prev.settles.some((s) => s.phase === 'fail' && s.outcome !== 'dead');
      if (deliberate) continue;
      duplicates++;
      if (disturbed(prev) === null) {
        unexplainedDuplicates.push(
          `${id}: #${next.token} (pid ${next.pid}) after #${prev.token} (pid ${prev.pid})`,
        );
      }
    }
    const byStart = [...started].sort((a, b) => a.start! - b.start!);
    for (let i = 0; i < byStart.length; i++) {
      const a = byStart[i]!;
      const aEnd = a.end ?? input.exits.get(a.pid) ?? Infinity;
      for (let j = i + 1; j < byStart.length; j++) {
        const b = byStart[j]!;
        if (b.start! > aEnd) break;
        concurrent++;
        if (disturbed(a) === null) {
          unexplainedConcurrent.push(`${id}: #${a.token} (pid ${a.pid}) and #${b.token} (pid ${b.pid})`);
        }
      }
    }
  }
  flag('jobs run again with no fault to explain it', unexplainedDuplicates);
  flag('jobs run in two places at once with no fault to explain it', unexplainedConcurrent);

  const counts: ChaosCounts = {
    accepted: input.accepted.size,
    completed,
    completedReplyLost,
    dead: deadCount,
    lost: lost.length,
    unfinished: [...unfinished].filter((id) => input.accepted.has(id)).length,
    runs: runCount,
    duplicates,
    duplicatesUnexplained: unexplainedDuplicates.length,
    concurrentDoubleRuns: concurrent,
    concurrentUnexplained: unexplainedConcurrent.length,
    staleAcksRefused,
    staleAcksApplied: staleApplied.length,
    recreatedAfterCompletion: recreated.length,
    leaseOverlaps: overlaps.length,
    earlyClaims: earlyClaims.length,
    earlyStarts: earlyStarts.length,
    unexpectedDead: unexpectedDead.length,
  };
  return { ok: violations.length === 0, counts, violations };
}

/** The counts as the lines the chaos suite prints. */
export function formatCounts(counts: ChaosCounts, faults: Readonly<Record<string, number>>): string {
  const faultList = Object.entries(faults)
    .filter(([, n]) => n > 0)
    .map(([kind, n]) => `${kind} ${n}`)
    .join(', ');
  return [
    `accepted ${counts.accepted}, completed ${counts.completed} (${counts.completedReplyLost} by an ack whose reply was lost), dead ${counts.dead}, lost ${counts.lost}, unfinished ${counts.unfinished}`,
    `runs ${counts.runs}, duplicates ${counts.duplicates} (unexplained ${counts.duplicatesUnexplained}), concurrent double runs ${counts.concurrentDoubleRuns} (unexplained ${counts.concurrentUnexplained})`,
    `stale acks refused ${counts.staleAcksRefused}, stale acks applied ${counts.staleAcksApplied}, re-created after completion ${counts.recreatedAfterCompletion}, lease overlaps ${counts.leaseOverlaps}, early claims ${counts.earlyClaims}, early starts ${counts.earlyStarts}, unexpected dead ${counts.unexpectedDead}`,
    `faults: ${faultList || 'none'}`,
  ].join('\n');
}
