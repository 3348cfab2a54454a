/** The member test vectors, test/fixtures/wire-members.json, typed. */
import { readFileSync } from 'node:fs';

export interface LeaseVector {
  claims: number;
  claimedAt: number;
  id: string;
  group?: string;
  member: string;
}

export interface GroupVector {
  group: string;
  due: number;
  id: string;
  /** The member's bytes in hex (the due time is binary). */
  memberHex: string;
}

export interface PriorityVector {
  priority: number;
  id: string;
  member: string;
}

export interface MemberVectors {
  lease: LeaseVector[];
  group: GroupVector[];
  priority: PriorityVector[];
}

export function loadMemberVectors(): MemberVectors {
  return JSON.parse(
    readFileSync(new URL('../fixtures/wire-members.json', import.meta.url), 'utf8'),
  ) as MemberVectors;
}
