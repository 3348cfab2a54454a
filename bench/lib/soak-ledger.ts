/**
 * The soak's ledger and its check. Workers append one JSON line per event to a file of their own
 * (bench/processes/soak-worker.ts); the soak process keeps what the producer had accepted, which workers it
 * killed and when, and which ids it found dead. From these alone (nothing read back from Redis but
 * the final "is anything left"), checkSoak says whether a job was lost or ran twice while its
 * holder lived. Times are the local clock (one machine, so comparable across processes).
 */
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';

/** What a soak job asks its handler to do. */
export interface SoakPayload {
  /** 'ok': succeed; 'once': fail the first attempt, then succeed; 'always': fail every attempt (ends dead). */
  k: 'ok' | 'once' | 'always';
  /** How long the handler runs, ms. */
  ms: number;
}

/** How the soak process configures a worker process (JSON in argv[2]). */
export interface SoakWorkerConfig {
  url: string;
  queue: string;
  concurrency: number;
  ledger: string;
}

/** Worker process to soak process, over IPC. */
export type SoakWorkerMessage =
  { type: 'ready' } | { type: 'stats'; completed: number; failed: number; dead: number };

/**
 * One ledger line: handler start ('s'), handler end ('e', ok false when it threw), completed ('c':
 * the ack was applied), dead ('d': the job went to the dead set).
 */
export type SoakEntry =
  | { e: 's'; id: string; a: number; t: number }
  | { e: 'e'; id: string; a: number; t: number; ok: boolean }
  | { e: 'c'; id: string; t: number }
  | { e: 'd'; id: string; t: number };

/** One handler run of a job, in one process. */
interface Run {
  pid: number;
  attempt: number;
  start: number;
  end?: number;
  ok?: boolean;
}

/** What a job's history says, per id. */
interface History {
  runs: Run[];
  completed: boolean;
  dead: boolean;
}

/** Everything checkSoak reads. */
export interface SoakInput {
  /** Ids whose add resolved, and what each was asked to do. */
  accepted: ReadonlyMap<string, SoakPayload['k']>;
  /** Each worker process's ledger, by pid. */
  ledgers: ReadonlyMap<number, readonly SoakEntry[]>;
  /** When the soak SIGKILLed each killed worker (local ms). */
  killedAt: ReadonlyMap<number, number>;
  /** Ids the soak found in the dead set (and removed) while it ran. */
  foundDead: ReadonlySet<string>;
  /** Ids still scheduled, due or active in Redis at the end. */
  unfinished: ReadonlySet<string>;
}

/** The verdict. */
export interface SoakReport {
  accepted: number;
  completed: number;
  dead: number;
  /** Completed by an ack whose reply its worker did not live to see: ended ok, then SIGKILLed, and gone from Redis. */
  completedReplyLost: number;
  lost: number;
  /** Runs of a job that began before the previous run's holder had failed it or died. */
  ranTwiceWhileHolderLived: number;
  /** A job that should have completed ended dead, or one that should have died completed. */
  unexpectedOutcome: number;
  runs: number;
  /** Examples of each problem, for the message. */
  examples: string[];
}

const EXAMPLES = 5;

/** Read a ledger file (a trailing partial line, cut by a SIGKILL, is ignored). */
export async function readSoakLedger(path: string): Promise<SoakEntry[]> {
  const entries: SoakEntry[] = [];
  const lines = createInterface({ input: createReadStream(path), crlfDelay: Infinity });
  for await (const line of lines) {
    if (!line.endsWith('}')) continue;
    try {
      entries.push(JSON.parse(line) as SoakEntry);
    } catch {
      // A line cut by a SIGKILL mid-write.
    }
  }
  return entries;
}

/** Check a soak run: lost jobs, jobs run twice while their holder lived, wrong outcomes. */
export function checkSoak(input: SoakInput): SoakReport {
  const histories = new Map<string, History>();
  const historyOf = (id: string): History => {
    let h = histories.get(id);
    if (!h) {
      h = { runs: [], completed: false, dead: false };
      histories.set(id, h);
    }
    return h;
  };
  let runs = 0;
  for (const [pid, entries] of input.ledgers) {
    // The run of each (id, attempt) in this process that has not ended yet.
    const open = new Map<string, Run>();
    for (const entry of entries) {
      const h = historyOf(entry.id);
      switch (entry.e) {
        case 's': {
          const run: Run = { pid, attempt: entry.a, start: entry.t };
          h.runs.push(run);
          open.set(`${entry.id}\u0000${entry.a}`, run);
          runs++;
          break;
        }
        case 'e': {
          const run = open.get(`${entry.id}\u0000${entry.a}`);
          if (run) {
            run.end = entry.t;
            run.ok = entry.ok;
            open.delete(`${entry.id}\u0000${entry.a}`);
          }
          break;
        }
        case 'c':
          h.completed = true;
          break;
        case 'd':
          h.dead = true;
          break;
      }
    }
  }
  for (const id of input.foundDead) historyOf(id).dead = true;

  const examples: Record<'lost' | 'twice' | 'outcome', string[]> = { lost: [], twice: [], outcome: [] };
  const note = (kind: keyof typeof examples, text: string): void => {
    if (examples[kind].length < EXAMPLES) examples[kind].push(text);
  };
  let completed = 0;
  let dead = 0;
  let completedReplyLost = 0;
  let lost = 0;
  let ranTwice = 0;
  let unexpectedOutcome = 0;
  for (const [id, kind] of input.accepted) {
    const h = histories.get(id) ?? { runs: [], completed: false, dead: false };
    h.runs.sort((a, b) => a.start - b.start);
    // Ran twice while its holder lived: a run began while the previous run's holder still held the
    // job: it had neither failed it (a deliberate failure, ended before) nor been killed.
    for (let i = 1; i < h.runs.length; i++) {
      const before = h.runs[i - 1]!;
      const run = h.runs[i]!;
      const failedFirst = before.ok === false && before.end !== undefined && before.end <= run.start;
      const killed = input.killedAt.get(before.pid);
      const holderDied = killed !== undefined && killed <= run.start;
      if (!failedFirst && !holderDied) {
        ranTwice++;
        note(
          'twice',
          `${id}: attempt ${before.attempt} in ${before.pid} at ${before.start}` +
            `${before.end === undefined ? '' : `-${before.end} (${before.ok ? 'ok' : 'failed'})`}, ` +
            `then attempt ${run.attempt} in ${run.pid} at ${run.start}`,
        );
      }
    }
    const last = h.runs.at(-1);
    const killed = last === undefined ? undefined : input.killedAt.get(last.pid);
    if (h.completed) {
      completed++;
    } else if (h.dead) {
      dead++;
    } else if (
      !input.unfinished.has(id) &&
      last?.ok === true &&
      last.end !== undefined &&
      killed !== undefined &&
      killed >= last.end
    ) {
      // Its ack may have been applied with the reply lost in the kill: nothing left in Redis says
      // otherwise, and the handler did finish.
      completedReplyLost++;
    } else {
      lost++;
      note(
        'lost',
        `${id} (${kind}): ${h.runs.length} run(s)${input.unfinished.has(id) ? ', still in Redis at the end' : ''}`,
      );
      continue;
    }
    const endedDead = h.dead && !h.completed;
    if (endedDead !== (kind === 'always')) {
      unexpectedOutcome++;
      note('outcome', `${id} (${kind}) ended ${endedDead ? 'dead' : 'completed'}`);
    }
  }
  return {
    accepted: input.accepted.size,
    completed,
    dead,
    completedReplyLost,
    lost,
    ranTwiceWhileHolderLived: ranTwice,
    unexpectedOutcome,
    runs,
    examples: [
      ...examples.lost.map((e) => `lost: ${e}`),
      ...examples.twice.map((e) => `ran twice while its holder lived: ${e}`),
      ...examples.outcome.map((e) => `unexpected outcome: ${e}`),
    ],
  };
}
