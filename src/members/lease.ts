/**
 * The lease member: the member of the lease ZSET (`leases` in src/redis/keys.ts) a running job is
 * held by, and the fence every fate presents. "<token>|<id>", and "\0<group>" after it for a
 * grouped job, where the token is "<claims>.<claimed at ms>" (unique per claim of a job: the claim
 * count only grows). A token has no '|', so the first '|' ends it (an id may hold '|'); ids and
 * groups hold no control characters, so a '\0' starts the group. The member names the group, so
 * whatever ends a lease knows the group slot it frees, and the partition of a grouped job, without
 * reading the record.
 *
 * This module is the TypeScript side's only reader and writer of the format; the Lua side's is
 * src/scripts/includes/record.lua (rec_token, rec_member, member_id, member_id_group,
 * member_token, member_group; claim.lua builds it inline on its hot path). Both are checked
 * against test/fixtures/wire-members.json.
 */

/** A lease member's parts. */
export interface LeaseMember {
  /** "<claims>.<claimed at ms>". */
  readonly token: string;
  readonly id: string;
  /** The job's group; undefined for an ungrouped job. */
  readonly group: string | undefined;
}

/** The token of the `claims`-th claim of a job, claimed at `claimedAt` (ms, server clock). */
export function leaseToken(claims: number, claimedAt: number): string {
  return `${claims}.${claimedAt}`;
}

/** The lease member of job `id` held by `token`. */
export function leaseMember(token: string, id: string, group?: string): string {
  return group === undefined ? `${token}|${id}` : `${token}|${id}\0${group}`;
}

/** A lease member's parts. */
export function parseLeaseMember(member: string): LeaseMember {
  const bar = member.indexOf('|');
  const zero = member.indexOf('\0', bar + 1);
  return {
    token: member.slice(0, bar),
    id: zero === -1 ? member.slice(bar + 1) : member.slice(bar + 1, zero),
    group: zero === -1 ? undefined : member.slice(zero + 1),
  };
}

/** The token of a lease member: what precedes its first '|'. */
export function tokenOfLease(member: string): string {
  return member.slice(0, member.indexOf('|'));
}

/** The job id of a lease member (parseLeaseMember without its object: read for every claimed job). */
export function idOfLease(member: string): string {
  const bar = member.indexOf('|');
  const zero = member.indexOf('\0', bar + 1);
  return zero === -1 ? member.slice(bar + 1) : member.slice(bar + 1, zero);
}

/** The group of a lease member, or undefined for an ungrouped job. */
export function groupOfLease(member: string): string | undefined {
  const zero = member.indexOf('\0');
  return zero === -1 ? undefined : member.slice(zero + 1);
}

/** What places the job a lease member holds among partitions: its group if it has one, else its id. */
export function placementKeyOfLease(member: string): string {
  const bar = member.indexOf('|');
  const zero = member.indexOf('\0', bar + 1);
  return zero === -1 ? member.slice(bar + 1) : member.slice(zero + 1);
}
