import { Command } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { commandHead, plainArgs, RespRun, sendPrepared, type PreparedArg } from './prepared-command.js';
import type { RedisClient } from './connection.js';

const KEYS = ['dq:{q}:s', 'dq:{q}:j', 'dq:{q}:é'];

/** What sendPrepared hands the client: the command, caught before it is written. */
function preparedCommand(name: string, target: string, keys: string[], rest: PreparedArg[]): Command {
  let sent: Command | undefined;
  const client = {
    options: {},
    sendCommand: (command: Command) => {
      sent = command;
      return Promise.resolve(null);
    },
  } as unknown as RedisClient;
  void sendPrepared(client, commandHead(name, target, keys), rest);
  if (!sent) throw new Error('nothing sent');
  return sent;
}

/** The bytes ioredis itself writes for the same call through callBuffer. */
function ioredisBytes(name: string, target: string, keys: string[], rest: PreparedArg[]): Buffer {
  const written = new Command(name, [target, keys.length, ...keys, ...plainArgs(rest)], {
    replyEncoding: null,
  }).toWritable({});
  return Buffer.isBuffer(written) ? written : Buffer.from(written);
}

function bytesOf(command: Command): Buffer {
  const written = command.toWritable({});
  return Buffer.isBuffer(written) ? written : Buffer.from(written);
}

describe('a prepared command', () => {
  it('writes the same bytes as ioredis for strings, numbers and runs (non-ASCII counted in bytes)', () => {
    const rest = [
      1,
      15_000,
      'hold',
      new RespRun([1, 0, 'zm', 'ü']),
      2,
      'a|b',
      -1.5,
      0,
      -7,
      1_733_000_000_123,
      1e21,
    ];
    expect(bytesOf(preparedCommand('FCALL', 'fn', KEYS, rest)).toString()).toBe(
      ioredisBytes('FCALL', 'fn', KEYS, rest).toString(),
    );
  });

  it('writes the same bytes as ioredis with Buffer arguments, empty ones too', () => {
    const rest = [new RespRun(['x']), Buffer.from([0, 255, 13, 10]), '', Buffer.alloc(0), 7];
    expect(bytesOf(preparedCommand('EVALSHA', 'abc', KEYS, rest))).toEqual(
      ioredisBytes('EVALSHA', 'abc', KEYS, rest),
    );
  });

  it('writes the same bytes again when resent (a reconnect writes unanswered commands again)', () => {
    const rest = [1, new RespRun(['x', 2]), Buffer.from('r'), 'm'];
    const command = preparedCommand('FCALL', 'fn', KEYS, rest);
    const first = bytesOf(command);
    expect(bytesOf(command)).toEqual(first);
    expect(first).toEqual(ioredisBytes('FCALL', 'fn', KEYS, rest));
  });

  it('keeps the bytes of a written command when later commands are written (their buffers share a slab)', () => {
    const commands = Array.from({ length: 200 }, (_, i) =>
      preparedCommand('FCALL', 'fn', KEYS, [i, Buffer.alloc(1 + (i % 7) * 300, i)]),
    );
    const first = commands.map((command) => Buffer.from(bytesOf(command)));
    // Written again (a resend), each command gives the bytes it gave at first, and its own.
    commands.forEach((command, i) => {
      expect(bytesOf(command)).toEqual(first[i]);
      expect(first[i]).toEqual(ioredisBytes('FCALL', 'fn', KEYS, [i, Buffer.alloc(1 + (i % 7) * 300, i)]));
    });
  });

  it('routes by the slot ioredis finds for the same keys', () => {
    const command = preparedCommand('FCALL', 'fn', KEYS, []);
    const plain = new Command('FCALL', ['fn', KEYS.length, ...KEYS]);
    expect(command.getSlot()).toBe(plain.getSlot());
    expect(command.getSlot()).not.toBe(new Command('GET', ['dq:{other}:s']).getSlot());
  });
});

describe('plainArgs', () => {
  it('spreads runs into their values, in place', () => {
    expect(plainArgs([1, new RespRun(['a', 2]), 'b'])).toEqual([1, 'a', 2, 'b']);
  });

  it('returns a list without runs as it is', () => {
    const args = [1, 'a'];
    expect(plainArgs(args)).toBe(args);
  });
});
