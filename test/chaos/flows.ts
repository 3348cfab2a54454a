/**
 * Flows in the chaos run (issue 33): some of the producer's jobs are flows, a parent and
 * FLOW_CHILDREN children added with queue.addFlow, whose jobs are accepted like any other (so the
 * run's "nothing lost" covers them). After the run each parent must have completed exactly once,
 * and every run of a parent must have found all its children's results (the handler records
 * that: a `flow` ledger line), i.e. no parent ran before its last child completed.
 */
import { FlowExistsError, type Queue } from '../../src/index.js';
import type { ChaosEntry, ChaosPayload } from './ledger.js';

/** Children per flow parent. */
export const FLOW_CHILDREN = 3;

/** What the flows of a run came to. */
export interface FlowReport {
  /** Flow parents accepted. */
  parents: number;
  /** Parents whose ack was applied exactly once (all of them, when the run is clean). */
  completedOnce: number;
  /** Runs of parents (a lease lost to a fault runs a job again: more than parents then). */
  runs: number;
  violations: string[];
}

/**
 * Add the flow of parent `id`: its children `<id>.c<k>`, each with `ms` from `pick`. A call that
 * failed may or may not have been written: it is sent again, and FlowExistsError (every id of a
 * flow is written at once, or none) then means it was. Resolves to the ids it accepted.
 */
export async function addChaosFlow(
  queue: Queue<ChaosPayload>,
  id: string,
  pick: () => number,
  attempts: number,
  retryMs: number,
): Promise<string[]> {
  const children = Array.from({ length: FLOW_CHILDREN }, (_, k) => ({
    payload: { ms: 5 + Math.floor(pick() * 100) },
    opts: { id: `${id}.c${k}`, attempts, delay: Math.floor(pick() * 2_000) },
  }));
  const flow = { payload: { ms: 5, flowChildren: FLOW_CHILDREN }, opts: { id, attempts }, children };
  for (let tries = 1; ; tries++) {
    try {
      await queue.addFlow(flow);
      break;
    } catch (err) {
      if (err instanceof FlowExistsError) break;
      if (tries >= 50) throw err;
      await new Promise((resolve) => setTimeout(resolve, retryMs));
    }
  }
  return [id, ...children.map((child) => child.opts.id)];
}

/** Check the flows whose parents are `parents` against the workers' ledger lines. */
export function checkFlows(entries: readonly ChaosEntry[], parents: ReadonlySet<string>): FlowReport {
  const violations: string[] = [];
  const applied = new Map<string, number>();
  let runs = 0;
  for (const e of entries) {
    if (e.phase === 'ack' && e.outcome === 'ok' && parents.has(e.id)) {
      applied.set(e.id, (applied.get(e.id) ?? 0) + 1);
    }
    if (e.phase === 'flow') {
      runs += 1;
      if (e.found !== e.children) {
        violations.push(`flow parent ${e.id} ran with ${e.found} of its ${e.children} children's results`);
      }
    }
  }
  let completedOnce = 0;
  for (const id of parents) {
    const count = applied.get(id) ?? 0;
    if (count === 1) completedOnce += 1;
    else if (count > 1) violations.push(`flow parent ${id} was completed ${count} times`);
  }
  return { parents: parents.size, completedOnce, runs, violations };
}
