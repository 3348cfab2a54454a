/**
 * Flows against a model (issue 33): random flows (up to 3 levels, 3 children a parent) added by
 * add-flow.lua, then run by random claims of 1 to 3 jobs whose calls carry the acks of a random
 * subset of the jobs held, and resend acks already applied (a reply lost: the same member and
 * known deadline again). The real claim.lua decides; the model checks after every call that
 *   - a parent is claimed only once every one of its children was completed (its ack applied),
 *   - every job is claimed once and completed once (a resent ack is answered 'already' and counts
 *     for its parent once: a second count would let the parent run before its last child),
 *   - each parent's childResults are its children's results,
 * and, when every flow ran, that the flow keys are empty.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addFlow, type FlowInput } from '../../src/operations/add-flow.js';
import { childResults } from '../../src/operations/child-results.js';
import type { AckItem, ClaimedJob } from '../../src/operations/claim.js';
import { encodeRecord, NEW_JOB_HEADER } from '../../src/record/index.js';
import { claimJobs, freshKeys, startFixture, stopFixture, type Fixture } from '../hotpath/support.js';
import { seeded } from '../support/property-seed.js';

/** The queue name in `keys`'s hash tag. */
function queueNameOf(keys: { records: string }): string {
  return /\{([^}]+)\}/.exec(keys.records)![1]!;
}

/** A flow's shape: each entry a job, its value its parent's index (-1: the root), parents first. */
const shapes = fc.array(fc.nat(), { minLength: 0, maxLength: 7 }).map((picks) => {
  const parents = [-1];
  const levels = [1];
  const kids = [0];
  for (const pick of picks) {
    const open = parents.map((_, i) => i).filter((i) => levels[i]! < 3 && kids[i]! < 3);
    if (open.length === 0) break;
    const parent = open[pick % open.length]!;
    parents.push(parent);
    levels.push(levels[parent]! + 1);
    kids.push(0);
    kids[parent]! += 1;
  }
  return parents;
});

/** One call of the run: how many to claim, which held jobs to ack (by pick), whether to resend one. */
const steps = fc.array(
  fc.record({
    limit: fc.integer({ min: 1, max: 3 }),
    acks: fc.array(fc.nat(), { maxLength: 3 }),
    resend: fc.nat(),
  }),
  { minLength: 1, maxLength: 60 },
);

let f: Fixture;
beforeAll(async () => {
  f = await startFixture();
});
afterAll(async () => {
  await stopFixture(f);
});

describe('flows against the model', () => {
  it('a parent never runs before its last child completed; a resent ack counts once', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(shapes, { minLength: 1, maxLength: 3 }), steps, async (flows, plan) => {
        const keys = freshKeys('flow-model');
        const parentOf = new Map<string, string>();
        const childrenOf = new Map<string, string[]>();
        for (const [n, shape] of flows.entries()) {
          const ids = shape.map((_, i) => `f${n}-${i}`);
          const inputs: FlowInput[] = shape.map((parent, i) => ({
            id: ids[i]!,
            when: { delay: 0 },
            record: encodeRecord({ ...NEW_JOB_HEADER, flow: true }, Buffer.from(`"${ids[i]}"`)),
            parent,
            ignoreChildFailure: false,
          }));
          await addFlow(
            f.client,
            [{ name: queueNameOf(keys), keys, eventsCap: 0, groupConcurrency: 0 }],
            inputs,
            performance.now(),
          );
          shape.forEach((parent, i) => {
            if (parent < 0) return;
            parentOf.set(ids[i]!, ids[parent]!);
            childrenOf.set(ids[parent]!, [...(childrenOf.get(ids[parent]!) ?? []), ids[i]!]);
          });
        }
        const total = flows.reduce((sum, shape) => sum + shape.length, 0);
        const claimed = new Map<string, number>();
        const completed = new Set<string>();
        let held: ClaimedJob[] = [];
        const applied: AckItem[] = [];
        const ackOf = (job: ClaimedJob): AckItem => ({
          member: job.member,
          knownDeadline: job.deadline,
          hadError: false,
          progressed: false,
          header: job.header,
          flow: true,
          // The result: the job's own id, JSON text.
          result: Buffer.from(`"r-${job.id}"`),
        });
        const run = async (limit: number, acks: AckItem[], fresh: ClaimedJob[]): Promise<void> => {
          const out = await claimJobs(f, keys, limit, { acks });
          acks.forEach((ack, i) => {
            const id = ack.member.slice(ack.member.indexOf('|') + 1);
            const outcome = out.acks[i]!;
            if (fresh.some((job) => job.member === ack.member)) {
              expect(outcome.status, `ack of ${id}`).toBe('ok');
              completed.add(id);
              applied.push(ack);
            } else {
              expect(outcome.status, `resent ack of ${id}`).toBe('already');
            }
          });
          for (const job of out.jobs) {
            claimed.set(job.id, (claimed.get(job.id) ?? 0) + 1);
            const kids = childrenOf.get(job.id) ?? [];
            for (const kid of kids)
              expect(completed.has(kid), `${job.id} claimed before its child ${kid} completed`).toBe(true);
            if (kids.length > 0) {
              const results = await childResults(f.client, keys, job.id);
              expect(results.map((r) => r.id)).toEqual(kids);
              for (const r of results) {
                expect(r.end.kind).toBe('completed');
                expect(r.end.kind === 'completed' && r.end.result?.toString()).toBe(`"r-${r.id}"`);
              }
            }
            held.push(job);
          }
        };
        for (const step of plan) {
          const picked = [...new Set(step.acks.map((pick) => pick % Math.max(held.length, 1)))]
            .map((i) => held[i])
            .filter((job): job is ClaimedJob => job !== undefined);
          held = held.filter((job) => !picked.includes(job));
          const acks = picked.map(ackOf);
          const resend =
            applied.length > 0 && step.resend % 2 === 0 ? applied[step.resend % applied.length] : undefined;
          if (resend) acks.splice(step.resend % (acks.length + 1), 0, resend);
          await run(step.limit, acks, picked);
        }
        // Drain: ack everything held, claim until every job ran.
        for (let guard = 0; completed.size < total && guard < total * 2 + 2; guard++) {
          const picked = held;
          held = [];
          await run(3, picked.map(ackOf), picked);
        }
        expect(completed.size).toBe(total);
        for (const count of claimed.values()) expect(count).toBe(1);
        expect(await f.client.exists(keys.flows, keys.flowsWaiting)).toBe(0);
        for (const [child, parent] of parentOf)
          expect(completed.has(child) && completed.has(parent)).toBe(true);
      }),
      seeded({ numRuns: 60 }),
    );
  });
});
