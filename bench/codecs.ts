/**
 * The built-in codecs side by side: encoded bytes, and encode, decode and encode+decode operations per
 * second, for job payloads of about 100 B, 1 KiB and 10 KiB (sizes as the json codec writes them). Codecs
 * are payload-only (layout 2): these bytes are what a job's record holds after its header
 * (docs/ARCHITECTURE.md §3.2), with no envelope around them. Every
 * codec carries the same data: an email job with a Date, a 64-bit id, strings, lists, a map and bytes; the
 * protobuf codec carries it as a message of the test type (test/fixtures/proto/email.proto).
 *
 * Run: npm run bench:codecs [-- --ms=400 --rounds=3]
 * Each figure is the median of `rounds` interleaved runs of `ms` milliseconds of CPU time, after a warm-up,
 * counted per CPU-second of this process so that other load on the machine skews it less; expect ±10%.
 */
import { cpus, loadavg } from 'node:os';
import { isDeepStrictEqual } from 'node:util';
import { create } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { Codec } from '../src/codec/codec.js';
import { jsonCodec } from '../src/codec/json.js';
import { msgpackCodec } from '../src/codec/msgpack.js';
import { protobufCodec } from '../src/codec/protobuf.js';
import { EmailSchema } from '../test/fixtures/proto/gen/email_pb.js';

const args = new Map(
  process.argv.slice(2).map((arg) => {
    const [key, value] = arg.replace(/^--/, '').split('=');
    return [key, Number(value)] as const;
  }),
);
const MS = args.get('ms') ?? 400;
const ROUNDS = args.get('rounds') ?? 3;

interface Shape {
  /** Only to, subject, userId and urgent when false. */
  full: boolean;
  body: number;
  tags: number;
  headers: number;
  cc: number;
  attachment: number;
}

const SIZES: [string, Shape][] = [
  ['~100 B', { full: false, body: 0, tags: 0, headers: 0, cc: 0, attachment: 0 }],
  ['~1 KiB', { full: true, body: 300, tags: 8, headers: 4, cc: 3, attachment: 64 }],
  ['~10 KiB', { full: true, body: 4000, tags: 60, headers: 30, cc: 40, attachment: 1024 }],
];

/** The same email as plain data (json, msgpack) and as a protobuf message. */
function payloads(shape: Shape): { plain: unknown; message: unknown } {
  const words = 'the quick brown fox jumps over the lazy dog and keeps running through the field ';
  const small = { to: 'ada@example.com', subject: 'Welcome', userId: 9_007_199_254_740_993n, urgent: true };
  if (!shape.full) return { plain: small, message: create(EmailSchema, small) };
  const data = {
    ...small,
    body: words.repeat(Math.ceil(shape.body / words.length)).slice(0, shape.body),
    sendAfter: new Date(Date.UTC(2026, 0, 2, 3, 4, 5, 6)),
    tags: Array.from({ length: shape.tags }, (_, i) => `tag-${i}`),
    headers: Object.fromEntries(
      Array.from({ length: shape.headers }, (_, i) => [`x-header-${i}`, `value ${i}`]),
    ),
    cc: Array.from({ length: shape.cc }, (_, i) => ({ address: `user${i}@example.com`, name: `User ${i}` })),
    attachment: new Uint8Array(shape.attachment).map((_, i) => i % 251),
  };
  const message = create(EmailSchema, { ...data, sendAfter: timestampFromDate(data.sendAfter) });
  return { plain: data, message };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

/**
 * Runs `op` for about `ms` of this process's CPU time and returns operations per CPU-second. CPU time
 * rather than wall-clock time, so that other load on the machine does not count against a codec.
 */
function run(op: () => void, ms: number): number {
  let n = 0;
  const start = process.cpuUsage();
  let elapsed = 0;
  while (elapsed < ms) {
    for (let i = 0; i < 50; i++) op();
    n += 50;
    const used = process.cpuUsage(start);
    elapsed = (used.user + used.system) / 1000;
  }
  return (n / elapsed) * 1000;
}

/** Median operations per CPU-second of each op, measured in interleaved rounds after a warm-up. */
function measure(ops: (() => void)[]): number[] {
  for (const op of ops) run(op, Math.min(MS, 200));
  const results = ops.map((): number[] => []);
  for (let round = 0; round < ROUNDS; round++) ops.forEach((op, i) => results[i]!.push(run(op, MS)));
  return results.map(median);
}

const codecs: [string, Codec, 'plain' | 'message'][] = [
  ['json', jsonCodec, 'plain'],
  ['msgpack', msgpackCodec, 'plain'],
  ['protobuf', protobufCodec(EmailSchema), 'message'],
];

const format = (n: number): string => Math.round(n).toLocaleString('en-US');
const rows: string[][] = [];
let sink = 0;

for (const [size, shape] of SIZES) {
  const data = payloads(shape);
  const cases = codecs.map(([name, codec, kind]) => {
    const payload = data[kind];
    const bytes = codec.encodePayload(payload);
    if (!isDeepStrictEqual(codec.decodePayload(bytes), payload))
      throw new Error(`${name} did not round-trip the ${size} payload`);
    // Decoded values feed `sink`, so no call can be optimized away.
    const seen = (value: unknown): number => (value === undefined ? 0 : 1);
    return {
      name,
      bytes: bytes.length,
      ops: [
        () => void (sink += codec.encodePayload(payload).length),
        () => void (sink += seen(codec.decodePayload(bytes))),
        () => void (sink += seen(codec.decodePayload(codec.encodePayload(payload)))),
      ],
    };
  });
  const figures = measure(cases.flatMap((c) => c.ops));
  const json = { bytes: cases[0]!.bytes, both: figures[2]! };
  cases.forEach((c, i) => {
    const [encode, decode, both] = figures.slice(i * 3, i * 3 + 3) as [number, number, number];
    rows.push([
      size,
      c.name,
      format(c.bytes),
      `${Math.round((c.bytes / json.bytes) * 100)}%`,
      format(encode),
      format(decode),
      format(both),
      `${(both / json.both).toFixed(2)}×`,
    ]);
  });
}

const header = ['payload', 'codec', 'bytes', 'vs json', 'encode/s', 'decode/s', 'encode+decode/s', 'vs json'];
const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
const line = (cells: string[]): string =>
  `| ${cells.map((c, i) => (i < 2 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(' | ')} |`;
console.log(
  `Codec benchmark: operations per CPU-second, median of ${ROUNDS} interleaved runs of ${MS} ms; bytes of the payload as stored after the record header.\nnode ${process.version}, ${cpus()[0]?.model ?? 'unknown CPU'}, load average ${loadavg()[0]!.toFixed(1)}\n`,
);
console.log(line(header));
console.log(`| ${widths.map((w, i) => (i < 2 ? '-'.repeat(w) : `${'-'.repeat(w - 1)}:`)).join(' | ')} |`);
for (const row of rows) console.log(line(row));
if (sink === 0) console.log('');
