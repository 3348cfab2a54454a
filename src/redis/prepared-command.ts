/**
 * Script calls whose unchanging arguments are turned into RESP once, not at every call. A worker
 * at concurrency 1 makes one claim call per job, and 28 of its ~36 arguments never change (the 19
 * KEYS, the settings ARGV). Sent through `callBuffer`, ioredis spreads, flattens, stringifies and
 * encodes every one of them again at each call; here they are written from a string made at the
 * start (bench/worker-cpu.ts at concurrency 1 measured what this saves).
 *
 * The command is an ioredis Command whose toWritable() writes the prepared text, so queueing while
 * offline, resending after a reconnect and a Cluster's MOVED/ASK redirections all treat it like any
 * other command; its slot is the one ioredis computes for the same keys. A client with a
 * `keyPrefix`, or whose callBuffer was wrapped, does not use it: see canPrepare().
 */
import { Command, Redis } from 'ioredis';
import type { RedisClient } from './connection.js';

/** One argument of a call, as ioredis takes it. */
export type Arg = string | number | Buffer;

/** A run of arguments encoded as RESP bulk strings once, written as they are at each call. */
export class RespRun {
  /** The RESP of the run: `$<bytes>\r\n<arg>\r\n` per argument. */
  readonly text: string;
  /** `text` as UTF-8, made on first use (by a call written as a Buffer). */
  private encoded: Buffer | undefined;

  constructor(
    /** The arguments, for calls that cannot use the prepared text (pipelines, a keyPrefix). */
    readonly values: ReadonlyArray<string | number>,
  ) {
    let text = '';
    for (const value of values) text += bulk(String(value));
    this.text = text;
  }

  /** The RESP of the run as bytes. */
  get bytes(): Buffer {
    return (this.encoded ??= Buffer.from(this.text));
  }
}

/**
 * Arguments made at each call that write their RESP straight into the command's buffer: a claim's
 * acks (four arguments each, one of them a record), which as separate arguments cost a Buffer per
 * record, a string per argument and a copy of each into the command. writeTo() may be called more
 * than once (a resend, a NOSCRIPT), so it must not change what it writes.
 */
export abstract class ArgWriter {
  /** How many arguments it stands for. */
  abstract readonly count: number;
  /** The bytes of its RESP. */
  abstract byteLength(): number;
  /** Write its RESP into `buf` at `at` (byteLength() bytes); returns the offset after it. */
  abstract writeTo(buf: Buffer, at: number): number;
  /** Its arguments as ioredis takes them, for the calls that build their commands through ioredis. */
  abstract values(): Arg[];
}

/** An argument of a prepared call: one argument, or a run of them encoded beforehand or at the write. */
export type PreparedArg = Arg | RespRun | ArgWriter;

/** Write `s`, ASCII only (digits, RESP heads, flag letters), at `at`; returns the offset after it. */
export function writeAscii(buf: Buffer, at: number, s: string): number {
  for (let i = 0; i < s.length; i++) buf[at + i] = s.charCodeAt(i);
  return at + s.length;
}

/** The bytes of `$<n>\r\n`, a bulk string's head. */
export function bulkHeadLength(n: number): number {
  return (n < 10 ? 1 : n < 100 ? 2 : n < 1000 ? 3 : String(n).length) + 3;
}

/** Write `$<n>\r\n` at `at`; returns the offset after it. */
export function writeBulkHead(buf: Buffer, at: number, n: number): number {
  return writeAscii(buf, at, n < BULK_HEADS.length ? (BULK_HEADS[n] ??= `$${n}\r\n`) : `$${n}\r\n`);
}

/** An empty argument, as RESP. */
const EMPTY_BULK = '$0\r\n\r\n';

/** A string argument as a RESP bulk string. */
export function bulk(s: string): string {
  // Two of an ack's four arguments are nearly always empty (its flags, its result): one constant,
  // not three strings made for each.
  if (s === '') return EMPTY_BULK;
  const n = Buffer.byteLength(s);
  if (n >= BULK_HEADS.length) return `$${n}\r\n${s}\r\n`;
  // The `$<n>\r\n` of short arguments (lease members, deadlines) made once per length, not twice
  // (the digits, then with the CRLF) per argument.
  const head = (BULK_HEADS[n] ??= `$${n}\r\n`);
  return `${head}${s}\r\n`;
}

const BULK_HEADS = new Array<string | undefined>(256);

/** `name target numkeys ...keys` encoded once, with the slot of the keys (null: none). */
export interface CommandHead {
  readonly run: RespRun;
  readonly slot: number | null;
}

/** The head of `name target keys...` (FCALL fn or EVALSHA sha), and its keys' slot as ioredis finds it. */
export function commandHead(name: string, target: string, keys: readonly string[]): CommandHead {
  const run = new RespRun([name, target, keys.length, ...keys]);
  // Asked of an ordinary Command for the same call, so the slot is the one ioredis would route by.
  const slot = new Command(name, [target, keys.length, ...keys]).getSlot();
  return { run, slot: slot ?? null };
}

/** ioredis's own callBuffer (Redis and Cluster share it). */
// eslint-disable-next-line @typescript-eslint/unbound-method -- compared by identity, never called
const IOREDIS_CALL_BUFFER: unknown = Redis.prototype.callBuffer;

/**
 * Whether `client` can be sent prepared commands: not with a keyPrefix, which ioredis applies to
 * the keys of the commands it builds and which the prepared text would leave out; and not when its
 * callBuffer was replaced (a wrapper that records or rewrites script calls, such as the chaos and
 * model tests' clients), which must go on seeing every script call.
 */
export function canPrepare(client: RedisClient): boolean {
  return !client.options.keyPrefix && client.callBuffer === IOREDIS_CALL_BUFFER;
}

/** `args` with every run spread into its values: for the paths that build their commands through ioredis. */
export function plainArgs(args: readonly PreparedArg[]): readonly Arg[] {
  // Most calls have no run: no copy for them.
  if (!args.some((arg) => arg instanceof RespRun || arg instanceof ArgWriter)) return args as readonly Arg[];
  const out: Arg[] = [];
  for (const arg of args) {
    if (arg instanceof RespRun) for (const value of arg.values) out.push(value);
    else if (arg instanceof ArgWriter) for (const value of arg.values()) out.push(value);
    else out.push(arg);
  }
  return out;
}

/** A command written from its head and a list of arguments and runs. */
class PreparedCommand extends Command {
  /** What toWritable() wrote, for a resend (after a reconnect, ioredis writes unanswered commands again). */
  private written: string | Buffer | undefined;

  constructor(
    private readonly head: CommandHead,
    /** Emptied once written: see toWritable(). */
    private rest: readonly PreparedArg[],
    showFriendlyErrorStack: boolean,
  ) {
    // The name is the head's first argument. No args for ioredis to flatten and stringify:
    // getSlot() and toWritable() answer from the head.
    super(String(head.run.values[0]), [], {
      replyEncoding: null,
      ...(showFriendlyErrorStack && { errorStack: new Error() }),
    });
  }

  override getSlot(): number {
    // ioredis's own type says number; null (no key) it returns as well, and handles.
    return this.head.slot as number;
  }

  override toWritable(): string | Buffer {
    this.written ??= this.encode();
    // The arguments are let go once written. Held until the reply, they kept each claim's
    // garbage alive across scavenges and into the old space: with them, bench/worker-cpu.ts at
    // concurrency 1 under --trace-gc showed the heap after each scavenge growing ~0.5 MB (flat at
    // 3076bf7) and scavenges of ~2 ms instead of ~0.7; without them both are as before.
    this.rest = [];
    return this.written;
  }

  private encode(): string | Buffer {
    let count = this.head.run.values.length;
    let text = this.head.run.text;
    for (const arg of this.rest) {
      // A call with Buffer arguments (a kept result) or writers (acks) is written as one Buffer.
      if (arg instanceof ArgWriter || Buffer.isBuffer(arg)) return this.encodeBytes();
      if (arg instanceof RespRun) {
        count += arg.values.length;
        text += arg.text;
      } else {
        count++;
        text += bulk(String(arg));
      }
    }
    return `*${count}\r\n${text}`;
  }

  /**
   * The command as one Buffer of its exact size: measured, then written, each argument in place
   * (no Buffer per argument, no concatenation of them).
   */
  private encodeBytes(): Buffer {
    const head = this.head.run;
    let count = head.values.length;
    let size = head.bytes.length;
    for (const arg of this.rest) {
      if (arg instanceof RespRun) {
        count += arg.values.length;
        size += arg.bytes.length;
      } else if (arg instanceof ArgWriter) {
        count += arg.count;
        size += arg.byteLength();
      } else if (Buffer.isBuffer(arg)) {
        count++;
        size += bulkHeadLength(arg.length) + arg.length + 2;
      } else {
        count++;
        size += Buffer.byteLength(bulk(String(arg)));
      }
    }
    const top = `*${count}\r\n`;
    const buf = commandBuffer(top.length + size);
    let at = writeAscii(buf, 0, top);
    at += head.bytes.copy(buf, at);
    for (const arg of this.rest) {
      if (arg instanceof RespRun) at += arg.bytes.copy(buf, at);
      else if (arg instanceof ArgWriter) at = arg.writeTo(buf, at);
      else if (Buffer.isBuffer(arg)) {
        at = writeBulkHead(buf, at, arg.length);
        at += arg.copy(buf, at);
        at = writeAscii(buf, at, '\r\n');
      } else at += buf.write(bulk(String(arg)), at, 'utf8');
    }
    if (at !== buf.length) throw new Error(`prepared command: wrote ${at} bytes of ${buf.length}`);
    return buf;
  }
}

/**
 * Command buffers are cut from slabs of this size. Buffer.allocUnsafe of a claim's ~5 KB (past
 * Node's own pool, which takes up to 4 KB) made an ArrayBuffer per call: ~4.7 µs on the
 * benchmark host, a tenth of a µs per job at concurrency 50 and more at lower ones.
 */
const SLAB_BYTES = 256 * 1024;
/** A command bigger than this gets a buffer of its own. */
const SLAB_MAX_CUT = SLAB_BYTES / 8;
let slab: ArrayBuffer | undefined;
let slabUsed = 0;

/**
 * A buffer of `size` bytes for one command. A slab's bytes are handed out once and never again (a
 * socket may still hold a command's bytes after write() returned, and a command keeps them for a
 * resend): a slab is let go when full, and freed by the GC once no command holds a cut of it.
 */
function commandBuffer(size: number): Buffer {
  if (size > SLAB_MAX_CUT) return Buffer.allocUnsafe(size);
  if (slab === undefined || slabUsed + size > SLAB_BYTES) {
    slab = new ArrayBuffer(SLAB_BYTES);
    slabUsed = 0;
  }
  const buf = Buffer.from(slab, slabUsed, size);
  // Cuts start 8-byte aligned, as Node's own pool does.
  slabUsed += (size + 7) & ~7;
  return buf;
}

/** Send `head` then `rest` on `client` (canPrepare(client) must hold); the reply as callBuffer gives it. */
export function sendPrepared(
  client: RedisClient,
  head: CommandHead,
  rest: readonly PreparedArg[],
): Promise<unknown> {
  return client.sendCommand(
    new PreparedCommand(head, rest, client.options.showFriendlyErrorStack === true),
  ) as Promise<unknown>;
}
