import { Command } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { finalRecord } from '../record/index.js';
import type { RedisClient } from '../redis/connection.js';
import {
  commandHead,
  plainArgs,
  RespRun,
  sendPrepared,
  type PreparedArg,
} from '../redis/prepared-command.js';
import { AckArgs, type AckItem } from './ack-args.js';

const KEYS = ['dq:{q}:s', 'dq:{q}:j'];
const HEADER = {
  attempts: 1,
  claims: 1,
  claimedAt: 1_733_000_000_123,
  runDue: 1_733_000_000_100,
  holder: 7,
  maxAttempts: 3,
};

/** The bytes sendPrepared writes for `rest`, and the bytes ioredis writes for the same plain arguments. */
function both(rest: PreparedArg[]): [Buffer, Buffer] {
  let sent: Command | undefined;
  const client = {
    options: {},
    sendCommand: (command: Command) => ((sent = command), Promise.resolve(null)),
  } as unknown as RedisClient;
  void sendPrepared(client, commandHead('FCALL', 'claim', KEYS), rest);
  const prepared = sent!.toWritable({});
  const plain = new Command('FCALL', ['claim', KEYS.length, ...KEYS, ...plainArgs(rest)], {
    replyEncoding: null,
  }).toWritable({});
  return [Buffer.from(prepared), Buffer.from(plain)];
}

describe('AckArgs', () => {
  const acks: AckItem[] = [
    // A plain ack: flag f and the final record.
    {
      member: '1.1733000000123|a',
      knownDeadline: 1_733_000_030_123,
      hadError: false,
      progressed: false,
      header: HEADER,
    },
    // Same deadline (its digits reused), a non-ASCII id, every flag and a kept result.
    {
      member: '2.1733000000123|é€\0grp',
      knownDeadline: 1_733_000_030_123,
      hadError: true,
      progressed: true,
      flow: true,
      result: Buffer.from([0, 13, 10, 255]),
      header: { ...HEADER, maxAttempts: 9, claims: 2 },
    },
    // A never-claimed header (no claim block), another deadline.
    {
      member: '3.1|b',
      knownDeadline: 5,
      hadError: false,
      progressed: false,
      header: { ...HEADER, claims: 0 },
    },
    // Without a header: the flags end in u when there is a result.
    { member: '4.1|c', knownDeadline: 6, hadError: false, progressed: false, result: Buffer.from('r') },
    { member: '5.1|d', knownDeadline: 6, hadError: true, progressed: false },
  ];

  it('writes the bytes ioredis writes for the same four arguments per ack', () => {
    const rest: PreparedArg[] = [3, 30_000, 7, new RespRun([1, 0, 'zm']), acks.length, new AckArgs(acks)];
    const [prepared, plain] = both(rest);
    expect(prepared).toEqual(plain);
  });

  it("writes a member from the reply's bytes as it does from its string", () => {
    const withBytes = acks.map((ack) => ({ ...ack, memberBytes: Buffer.from(ack.member) }));
    const rest: PreparedArg[] = [0, 30_000, 7, new RespRun([1]), acks.length];
    const [prepared, plain] = both([...rest, new AckArgs(withBytes)]);
    expect(prepared).toEqual(plain);
    expect(prepared).toEqual(both([...rest, new AckArgs(acks)])[0]);
  });

  it('gives the plain arguments: member, deadline, flags, final record or result', () => {
    expect(new AckArgs(acks).values()).toEqual([
      acks[0]!.member,
      1_733_000_030_123,
      'f',
      finalRecord(HEADER, 'completed'),
      acks[1]!.member,
      1_733_000_030_123,
      'epwf',
      finalRecord({ ...HEADER, maxAttempts: 9, claims: 2 }, 'completed', acks[1]!.result),
      acks[2]!.member,
      5,
      'f',
      finalRecord({ ...HEADER, claims: 0 }, 'completed'),
      acks[3]!.member,
      6,
      'u',
      Buffer.from('r'),
      acks[4]!.member,
      6,
      'e',
      '',
    ]);
  });

  it('writes the same bytes when written again (a resend)', () => {
    const args = new AckArgs(acks);
    const a = Buffer.alloc(args.byteLength());
    const b = Buffer.alloc(args.byteLength());
    expect(args.writeTo(a, 0)).toBe(a.length);
    expect(args.writeTo(b, 0)).toBe(b.length);
    expect(b).toEqual(a);
  });
});
