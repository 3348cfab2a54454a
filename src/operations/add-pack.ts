/**
 * add.lua's packed form (docs/PROTOCOL.md, "Adding a job"): all the jobs of one call in one binary
 * ARGV value, instead of five values per job. Each value costs the client its RESP framing
 * (ioredis measures and copies every piece) and Redis an argument object and a Lua string; the
 * class is left out, as the script reads it from the record's header anyway. On bench:add-cost
 * (W1's jobs, chunks of 1000) that took the producer's CPU per job from about 7.5 µs to 5.0 and
 * Redis's from 7.0 to 5.7.
 */

/**
 * A record whose payload is still text (the json codec's): the header's bytes, then the text as
 * UTF-8, written straight into the packed value. A bulk add of small jobs spent about as long
 * making a Buffer of each payload and then one of each record as encoding the payload at all.
 */
export interface TextRecord {
  /** The header's bytes (src/record/). */
  readonly head: Buffer;
  /** The payload, written as UTF-8 after the header. */
  readonly text: string;
  /** The record's bytes: the header's and the text's. */
  readonly length: number;
}

/** A record (header and payload bytes), in one Buffer or as a TextRecord. */
export type RecordBytes = Buffer | TextRecord;

/** `head` then `text` as a TextRecord. */
export function textRecord(head: Buffer, text: string): TextRecord {
  return { head, text, length: head.length + Buffer.byteLength(text, 'utf8') };
}

/** The record's bytes in one Buffer (the per-job form sends each record as its own value). */
export function recordBuffer(record: RecordBytes): Buffer {
  return Buffer.isBuffer(record) ? record : Buffer.concat([record.head, Buffer.from(record.text, 'utf8')]);
}

/** What packing reads of a job (add.ts's AddInput; declared here so the two modules do not import each other). */
export interface PackableJob {
  id: string;
  when: { delay: number } | { at: number };
  record: RecordBytes;
  mode: 'keep' | 'replace' | 'new';
}

const UINT16_MAX = 0xffff;
const UINT48_MAX = 2 ** 48 - 1;
const TWO32 = 2 ** 32;
/** Per job besides the id and the record: id length, mode, when, record length. */
const FIXED_BYTES = 2 + 2 + 6 + 4;
const KIND = { delay: 0x64, at: 0x61 } as const; // 'd', 'a'
const KEEP = { keep: 0x6b, replace: 0x72, new: 0x6e } as const; // 'k', 'r', 'n'

/**
 * About the bytes `job` takes in the packed value: exact for an id in ASCII (the usual), short by
 * up to two bytes per character of any other (at most 1,024 for the longest id): for bounding a
 * call's size (src/queue/add-calls.ts), where UTF-8 encoding each id to count it is not worth it.
 */
export function packedJobBytes(job: PackableJob): number {
  return FIXED_BYTES + job.id.length + job.record.length;
}

/**
 * The packed value of `jobs`: per job the id's length (uint16 BE) and UTF-8 bytes, the mode (two
 * letters, as in the per-job form), when (uint48 BE) and the record's length (uint32 BE) and
 * bytes. Undefined when a job does not fit it (a `when` that is not a whole number below 2^48, an
 * id over 65535 bytes): the caller then sends the per-job form, whose checks refuse such a value
 * by name, as they would from any producer.
 */
export function packAddJobs(jobs: readonly PackableJob[]): Buffer | undefined {
  let most = 0;
  for (const job of jobs) {
    const when = 'delay' in job.when ? job.when.delay : job.when.at;
    if (!Number.isInteger(when) || when < 0 || when > UINT48_MAX) return undefined;
    // A UTF-16 code unit is at most 3 bytes of UTF-8: the exact size is known once written.
    most += FIXED_BYTES + 3 * job.id.length + job.record.length;
  }
  const out = Buffer.allocUnsafe(most);
  let at = 0;
  for (const job of jobs) {
    const idBytes = out.write(job.id, at + 2, 'utf8');
    if (idBytes > UINT16_MAX) return undefined;
    out.writeUInt16BE(idBytes, at);
    at += 2 + idBytes;
    const delay = 'delay' in job.when;
    const when = 'delay' in job.when ? job.when.delay : job.when.at;
    out[at] = delay ? KIND.delay : KIND.at;
    out[at + 1] = KEEP[job.mode];
    // uint48 as 16 + 32 bits: writeUIntBE(…, 6) is several times slower per call.
    out.writeUInt16BE(Math.floor(when / TWO32), at + 2);
    out.writeUInt32BE(when % TWO32, at + 4);
    const record = job.record;
    out.writeUInt32BE(record.length, at + 8);
    at += FIXED_BYTES - 2;
    if (Buffer.isBuffer(record)) {
      out.set(record, at);
    } else {
      out.set(record.head, at);
      out.write(record.text, at + record.head.length, 'utf8');
    }
    at += record.length;
  }
  return out.subarray(0, at);
}
