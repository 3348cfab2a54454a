/**
 * A claim's acks as claim.lua takes them, four ARGV each (docs/PROTOCOL.md): the lease member, the
 * lease deadline the worker was told, the flags, and the final record (flag `f`) or the result. A
 * worker at concurrency 50 sends ~40 acks per claim: as separate arguments they cost a Buffer per
 * final record, a string per argument and a copy of each into the command; written here, each goes
 * straight into the command's one buffer (src/redis/prepared-command.ts). The bytes are the same.
 */
import { finalRecord, finalRecordLength, writeFinalRecord, type FinalHeader } from '../record/index.js';
import { ArgWriter, bulkHeadLength, writeAscii, writeBulkHead, type Arg } from '../redis/prepared-command.js';

/** One finished job to ack, by its lease member. */
export interface AckItem {
  /** The lease member the claim returned ("<claims>.<claimed at>|<id>[\0<group>]"): the fence. */
  member: string;
  /** The lease deadline this worker was last told, so a resent ack can be recognised. */
  knownDeadline: number;
  /**
   * The member's UTF-8 bytes as the claim reply carried them (ClaimedJob.memberBytes): written as
   * they are, where the member string would be measured and encoded again for every ack.
   */
  memberBytes?: Buffer | undefined;
  /** The record had the E flag: the ack deletes the job's last error. */
  hadError: boolean;
  /** The job reported progress: the ack deletes it. */
  progressed: boolean;
  /** The handler's result, encoded by the codec, to keep in the completed record (keepCompleted). */
  result?: Buffer;
  /**
   * The job belongs to a flow (its record's F flag): the ack carries flag 'w', so its parent counts
   * it (and keeps its result for childResults). Absent: not a flow's job.
   */
  flow?: true;
  /**
   * The job's header as the claim leased it: the completed record keeps its claim block and max
   * attempts (finalRecord), so `get()` shows the job as it was. Absent: the script reads the
   * stored record to make the same (one HGET per ack); a worker always sends it.
   */
  header?: FinalHeader;
}

/** The flags of `ack`: e (delete its error), p (its progress), w (tell its flow), then f or u. */
function flagsOf(ack: AckItem): string {
  if (ack.header !== undefined) {
    // Nearly every ack: one constant, no string made.
    if (!ack.hadError && !ack.progressed && !ack.flow) return 'f';
    return `${ack.hadError ? 'e' : ''}${ack.progressed ? 'p' : ''}${ack.flow ? 'w' : ''}f`;
  }
  return `${ack.hadError ? 'e' : ''}${ack.progressed ? 'p' : ''}${ack.flow ? 'w' : ''}${ack.result ? 'u' : ''}`;
}

/** The bytes of `s` as a RESP bulk string, ASCII only. */
function asciiBulkLength(s: string): number {
  return bulkHeadLength(s.length) + s.length + 2;
}

function writeAsciiBulk(buf: Buffer, at: number, s: string): number {
  at = writeBulkHead(buf, at, s.length);
  at = writeAscii(buf, at, s);
  return writeAscii(buf, at, '\r\n');
}

/** The acks of one claim call, written into its command. */
export class AckArgs extends ArgWriter {
  readonly count: number;
  /** Each ack's member in UTF-8 bytes, measured by byteLength() for writeTo(). */
  private memberBytes: number[] | undefined;

  constructor(private readonly acks: readonly AckItem[]) {
    super();
    this.count = acks.length * 4;
  }

  byteLength(): number {
    const memberBytes = new Array<number>(this.acks.length);
    let size = 0;
    // The acks of one claim mostly share their deadline: its digits made once.
    let deadline = NaN;
    let digits = '';
    for (let i = 0; i < this.acks.length; i++) {
      const ack = this.acks[i]!;
      const n = ack.memberBytes?.length ?? Buffer.byteLength(ack.member);
      memberBytes[i] = n;
      if (ack.knownDeadline !== deadline) {
        deadline = ack.knownDeadline;
        digits = String(deadline);
      }
      size += bulkHeadLength(n) + n + 2 + asciiBulkLength(digits) + asciiBulkLength(flagsOf(ack));
      const record =
        ack.header !== undefined
          ? finalRecordLength(ack.header, 'completed', ack.result)
          : (ack.result?.length ?? 0);
      size += bulkHeadLength(record) + record + 2;
    }
    this.memberBytes = memberBytes;
    return size;
  }

  writeTo(buf: Buffer, at: number): number {
    const memberBytes = this.memberBytes ?? [];
    let deadline = NaN;
    let digits = '';
    for (let i = 0; i < this.acks.length; i++) {
      const ack = this.acks[i]!;
      const n = memberBytes[i] ?? Buffer.byteLength(ack.member);
      at = writeBulkHead(buf, at, n);
      if (ack.memberBytes !== undefined) {
        buf.set(ack.memberBytes, at);
        at += n;
      } else at += buf.write(ack.member, at, n, 'utf8');
      at = writeAscii(buf, at, '\r\n');
      if (ack.knownDeadline !== deadline) {
        deadline = ack.knownDeadline;
        digits = String(deadline);
      }
      at = writeAsciiBulk(buf, at, digits);
      at = writeAsciiBulk(buf, at, flagsOf(ack));
      if (ack.header !== undefined) {
        at = writeBulkHead(buf, at, finalRecordLength(ack.header, 'completed', ack.result));
        at = writeFinalRecord(buf, at, ack.header, 'completed', ack.result);
      } else {
        const result = ack.result;
        at = writeBulkHead(buf, at, result?.length ?? 0);
        if (result) at += result.copy(buf, at);
      }
      at = writeAscii(buf, at, '\r\n');
    }
    return at;
  }

  values(): Arg[] {
    const out = new Array<Arg>(this.count);
    for (let i = 0, at = 0; i < this.acks.length; i++, at += 4) {
      const ack = this.acks[i]!;
      out[at] = ack.member;
      out[at + 1] = ack.knownDeadline;
      out[at + 2] = flagsOf(ack);
      out[at + 3] =
        ack.header !== undefined ? finalRecord(ack.header, 'completed', ack.result) : (ack.result ?? '');
    }
    return out;
  }
}
