/**
 * The group member: the member of the `groupJobs` ZSET (src/redis/keys.ts) a waiting grouped job
 * is found by, "<group>\0<due: 6 bytes, big-endian ms><id>", every score 0. ZRANGEBYLEX over
 * "[<group>\0" to "(<group>\1" gives one group's jobs in due order: group names hold no control
 * characters, so no other group's members fall in that range. The due bytes are binary, so the
 * member is bytes, not text.
 *
 * This module is the TypeScript side's only reader and writer of the format; the Lua side's is
 * src/scripts/includes/groups.lua (group_member, group_member_due, group_member_id). Both are
 * checked against test/fixtures/wire-members.json.
 */

/** A group member's parts. */
export interface GroupMember {
  readonly group: string;
  /** Due time, ms. */
  readonly due: number;
  readonly id: string;
}

/** Bytes of the due time: ms fit in 48 bits until the year 10889. */
const DUE_BYTES = 6;

/** The groupJobs member of job `id` of `group`, due at `due` ms. */
export function groupMember(group: string, due: number, id: string): Buffer {
  const g = Buffer.from(group, 'utf8');
  const i = Buffer.from(id, 'utf8');
  const out = Buffer.alloc(g.length + 1 + DUE_BYTES + i.length);
  g.copy(out, 0);
  out[g.length] = 0;
  out.writeUIntBE(due, g.length + 1, DUE_BYTES);
  i.copy(out, g.length + 1 + DUE_BYTES);
  return out;
}

/** A groupJobs member's parts. */
export function parseGroupMember(member: Buffer): GroupMember {
  const zero = member.indexOf(0);
  if (zero < 0 || member.length < zero + 1 + DUE_BYTES) {
    throw new Error(`not a group member: ${member.toString('hex')}`);
  }
  return {
    group: member.toString('utf8', 0, zero),
    due: member.readUIntBE(zero + 1, DUE_BYTES),
    id: member.toString('utf8', zero + 1 + DUE_BYTES),
  };
}

/** The ZRANGEBYLEX bounds of `group`'s members. */
export function groupRange(group: string): [min: string, max: string] {
  return [`[${group}\0`, `(${group}\u0001`];
}
