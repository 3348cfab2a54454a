/**
 * A claim whose reply came back late. The lease of a claimed job starts when the script runs,
 * somewhere between the send and the reply; all the worker knows for sure is that at least
 * `leaseMs - replyMs` of it is left when the reply arrives. A reply slowed by a stalled process,
 * a busy machine or a congested link can arrive after the lease is already gone: the reaper may
 * have handed the job to another worker, and starting it here would run it twice. So when the
 * reply took more than half a lease, the jobs' leases are confirmed (extended, which never
 * shortens one and refuses a lost one) before they start, and only the confirmed ones start.
 * A reply that was quick costs nothing.
 */
import type { ClaimOutput } from '../operations/claim.js';
import type { ExtendOutput } from '../operations/extend.js';

/** Extends the given lease members of one partition; a null deadline means the lease is gone. */
export type ConfirmLeases = (members: string[]) => Promise<ExtendOutput>;

/** Above this share of the lease, the reply is too late to trust the leases without asking. */
export const LATE_REPLY_SHARE = 0.5;

/** Whether a reply that took `replyMs` of `leaseMs` brought jobs whose leases must be confirmed first. */
export function isLateReply(out: ClaimOutput, replyMs: number, leaseMs: number): boolean {
  return out.jobs.length > 0 && replyMs > leaseMs * LATE_REPLY_SHARE;
}

/** `out` with only the jobs whose leases are still held, when the reply took `replyMs` of `leaseMs`. */
export async function confirmLateClaim(
  out: ClaimOutput,
  replyMs: number,
  leaseMs: number,
  confirm: ConfirmLeases,
): Promise<ClaimOutput & { lateLost: string[] }> {
  if (!isLateReply(out, replyMs, leaseMs)) return { ...out, lateLost: [] };
  const confirmed = await confirm(out.jobs.map((job) => job.member));
  const jobs: ClaimOutput['jobs'] = [];
  const lateLost: string[] = [];
  out.jobs.forEach((job, i) => {
    const deadline = confirmed.deadlines[i];
    if (deadline === null || deadline === undefined) lateLost.push(job.id);
    else jobs.push({ ...job, deadline });
  });
  return { ...out, jobs, lateLost };
}
