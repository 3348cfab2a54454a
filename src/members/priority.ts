/**
 * The priority member: the member of the `prioWaiting` and `prioReady` ZSETs (src/redis/keys.ts)
 * a waiting prioritized job is found by, "<priority>:<id>" with the priority as a whole number
 * from -1024 to 1023 in decimal. A priority has no ':', so the first ':' ends it (an id may hold
 * ':'). The same job id can wait under one priority only: its record's header names it.
 *
 * This module is the TypeScript side's only reader and writer of the format; the Lua side's is
 * src/scripts/includes/place.lua (prio_member, prio_member_id). Both are checked against
 * test/fixtures/wire-members.json.
 */

/** A priority member's parts. */
export interface PriorityMember {
  readonly priority: number;
  readonly id: string;
}

/** The member of job `id` waiting with `priority`. */
export function priorityMember(priority: number, id: string): string {
  return `${priority}:${id}`;
}

/** A priority member's parts. */
export function parsePriorityMember(member: string): PriorityMember {
  const colon = member.indexOf(':');
  const priority = colon > 0 ? Number(member.slice(0, colon)) : NaN;
  if (!Number.isInteger(priority)) throw new Error(`not a priority member: ${JSON.stringify(member)}`);
  return { priority, id: member.slice(colon + 1) };
}
