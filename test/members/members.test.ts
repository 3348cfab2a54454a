/**
 * The TypeScript side of the member formats (src/members/) against the shared vectors of
 * test/fixtures/wire-members.json; members-lua.test.ts holds the scripts to the same vectors.
 */
import { describe, expect, it } from 'vitest';
import { groupMember, groupRange, parseGroupMember } from '../../src/members/group.js';
import {
  groupOfLease,
  idOfLease,
  leaseMember,
  leaseToken,
  parseLeaseMember,
  placementKeyOfLease,
  tokenOfLease,
} from '../../src/members/lease.js';
import { parsePriorityMember, priorityMember } from '../../src/members/priority.js';
import { loadMemberVectors } from './vectors.js';

const vectors = loadMemberVectors();

describe('lease member', () => {
  it.each(vectors.lease)('$member', (v) => {
    const token = leaseToken(v.claims, v.claimedAt);
    expect(leaseMember(token, v.id, v.group)).toBe(v.member);
    expect(parseLeaseMember(v.member)).toStrictEqual({ token, id: v.id, group: v.group });
    expect(tokenOfLease(v.member)).toBe(token);
    expect(idOfLease(v.member)).toBe(v.id);
    expect(groupOfLease(v.member)).toBe(v.group);
    expect(placementKeyOfLease(v.member)).toBe(v.group ?? v.id);
  });
});

describe('group member', () => {
  it.each(vectors.group)('$group $due $id', (v) => {
    const member = groupMember(v.group, v.due, v.id);
    expect(member.toString('hex')).toBe(v.memberHex);
    expect(parseGroupMember(Buffer.from(v.memberHex, 'hex'))).toStrictEqual({
      group: v.group,
      due: v.due,
      id: v.id,
    });
  });

  it('orders one group by due time, and keeps other groups out of its range', () => {
    const [min, max] = groupRange('g');
    const inRange = (m: Buffer) =>
      Buffer.compare(m, Buffer.from(min.slice(1), 'utf8')) >= 0 &&
      Buffer.compare(m, Buffer.from(max.slice(1), 'utf8')) < 0;
    const early = groupMember('g', 1_000, 'z');
    const late = groupMember('g', 256_000, 'a');
    expect(Buffer.compare(early, late)).toBe(-1);
    expect([early, late].every(inRange)).toBe(true);
    expect(inRange(groupMember('g2', 0, 'a'))).toBe(false);
    expect(inRange(groupMember('f', 0, 'a'))).toBe(false);
  });

  it('refuses bytes that are not a group member', () => {
    expect(() => parseGroupMember(Buffer.from('no-zero'))).toThrow(/not a group member/);
  });
});

describe('priority member', () => {
  it.each(vectors.priority)('$member', (v) => {
    expect(priorityMember(v.priority, v.id)).toBe(v.member);
    expect(parsePriorityMember(v.member)).toStrictEqual({ priority: v.priority, id: v.id });
  });

  it('refuses a member without a whole-number priority', () => {
    expect(() => parsePriorityMember('x:1')).toThrow(/not a priority member/);
    expect(() => parsePriorityMember(':1')).toThrow(/not a priority member/);
  });
});
