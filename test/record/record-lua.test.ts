/**
 * src/scripts/includes/record.lua against the TypeScript record (src/record/) through a real
 * redis-server: the Lua parser reads every committed vector as decodeRecord does, and the Lua
 * rewrites (claim block, error flag, uncharge) give the bytes encodeRecord gives for the same
 * header.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeRecord, encodeRecord, finalRecord, type RecordHeader } from '../../src/record/index.js';
import { expandLua } from '../../src/redis/lua-source.js';
import { startRedis, type RedisServer } from '../support/redis-server.js';
import { loadRecordVectors } from '../vectors/records/load.js';

const scriptsDir = fileURLToPath(new URL('../../src/scripts/', import.meta.url));
const probe =
  expandLua(scriptsDir, 'includes/record.lua') +
  '\n' +
  readFileSync(new URL('./record-probe.lua', import.meta.url), 'utf8');

let server: RedisServer;
let client: Redis;

beforeAll(async () => {
  server = await startRedis();
  client = new Redis(server.url);
});

afterAll(async () => {
  client.disconnect();
  await server.stop();
});

async function run(op: string, record: Buffer, ...args: Array<string | number>): Promise<unknown> {
  return client.callBuffer('EVAL', probe, 0, op, record, ...args);
}

function parsed(reply: unknown): Record<string, string> {
  const list = (reply as Buffer[]).map((b) => b.toString('latin1'));
  const out: Record<string, string> = {};
  for (let i = 0; i < list.length; i += 2) out[list[i] ?? ''] = list[i + 1] ?? '';
  return out;
}

/** What rec_parse should report for a header, as the probe prints it. */
function expected(header: RecordHeader, body: number): Record<string, string> {
  const text = (v: number | string | undefined): string => (v === undefined ? 'nil' : String(v));
  return {
    attempts: text(header.attempts),
    claims: text(header.claims),
    claimed_at: text(header.claimedAt),
    run_due: text(header.runDue),
    holder: text(header.holder),
    max: text(header.maxAttempts),
    prio: text(header.priority),
    group: text(header.group),
    group_due: text(header.groupDue),
    timeout: text(header.timeoutMs),
    has_error: String(header.hasError),
    completed: String(header.completed),
    cancelled: String(header.cancelled),
    has_result: String(header.hasResult),
    body: String(body),
  };
}

describe('record.lua reads what src/record writes', () => {
  for (const v of loadRecordVectors()) {
    it(`rec_parse: ${v.name}`, async () => {
      const record = Buffer.from(v.hex, 'hex');
      const { headerLength } = decodeRecord(record);
      expect(parsed(await run('parse', record))).toStrictEqual(expected(v.full, headerLength + 1));
    });
  }

  it('rec_parse refuses an unknown format, reserved bits and truncation, with the reason', async () => {
    const reasons = async (hex: string): Promise<string> =>
      ((await run('parse', Buffer.from(hex, 'hex'))) as Buffer[]).map((b) => b.toString()).join(' ');
    expect(await reasons('0200')).toMatch(/^error record format byte 2 is unknown/);
    expect(await reasons('018080')).toMatch(/^error .*reserved bits/);
    expect(await reasons('01010002')).toMatch(/^error record is truncated: the claim block/);
    expect(await reasons('0110056731')).toMatch(/^error record is truncated: the group/);
  });
});

describe('record.lua rewrites headers as encodeRecord would write them', () => {
  const claim = { attempts: 4, claims: 9, claimedAt: 1767225600123, runDue: 1767225600000, holder: 65537 };
  for (const v of loadRecordVectors().filter((x) => !x.full.completed && !x.full.cancelled)) {
    const payload = Buffer.from(v.payloadHex, 'hex');
    const record = Buffer.from(v.hex, 'hex');

    it(`rec_claimed: ${v.name}`, async () => {
      const reply = await run(
        'claimed',
        record,
        claim.attempts,
        claim.claims,
        claim.claimedAt,
        claim.runDue,
        claim.holder,
      );
      expect((reply as Buffer).toString('hex')).toBe(
        encodeRecord({ ...v.full, ...claim }, payload).toString('hex'),
      );
    });

    it(`rec_with_error_flag on and off: ${v.name}`, async () => {
      const on = (await run('error-on', record)) as Buffer;
      expect(on.toString('hex')).toBe(encodeRecord({ ...v.full, hasError: true }, payload).toString('hex'));
      const off = (await run('error-off', on)) as Buffer;
      expect(off.toString('hex')).toBe(encodeRecord({ ...v.full, hasError: false }, payload).toString('hex'));
    });
  }

  it('rec_final keeps the claim block and max attempts, as finalRecord writes them', async () => {
    const claimed = { attempts: 3, claims: 3, claimedAt: 1767225600123, runDue: 1767225600000, holder: 7 };
    for (const v of loadRecordVectors().filter((x) => !x.full.completed && !x.full.cancelled)) {
      for (const header of [v.full, { ...v.full, ...claimed }]) {
        const record = encodeRecord(header, Buffer.from(v.payloadHex, 'hex'));
        const reply = (await run('final-cancelled', record)) as Buffer;
        expect(reply.toString('hex'), v.name).toBe(finalRecord(header, 'cancelled').toString('hex'));
        expect(decodeRecord(reply).header, v.name).toMatchObject({
          attempts: header.attempts,
          runDue: header.runDue,
          maxAttempts: header.maxAttempts,
          cancelled: true,
        });
      }
    }
  });

  it("rec_final_problem accepts finalRecord's completed records and refuses others, with the reason", async () => {
    const problem = async (record: Buffer): Promise<string> =>
      ((await run('final-problem', record)) as Buffer).toString();
    const header = { ...loadRecordVectors()[2]!.full };
    expect(await problem(finalRecord(header, 'completed'))).toBe('ok');
    expect(await problem(finalRecord(header, 'completed', Buffer.from('42')))).toBe('ok');
    expect(await problem(finalRecord(loadRecordVectors()[0]!.full, 'completed'))).toBe('ok');
    expect(await problem(finalRecord(header, 'cancelled'))).toMatch(/not a completed one/);
    expect(await problem(encodeRecord(header, Buffer.from('x')))).toMatch(/not a completed one/);
    expect(await problem(finalRecord(header, 'completed').subarray(0, 10))).toMatch(/truncated/);
  });

  it('rec_uncharge hands one attempt back and keeps the claim count', async () => {
    const header = { ...loadRecordVectors()[2]!.full };
    const record = encodeRecord(header, Buffer.from('x'));
    const reply = (await run('uncharge', record)) as Buffer;
    expect(decodeRecord(reply).header).toStrictEqual({ ...header, attempts: header.attempts - 1 });
  });

  it('rec_member and member_id: "<claims>.<claimedAt>|<id>", "\\0<group>" for a grouped job', async () => {
    const plain = encodeRecord({ ...loadRecordVectors()[2]!.full }, Buffer.from('x'));
    const [member, id, token, group] = ((await run('member', plain, 'job|1')) as Buffer[]).map((b) =>
      b.toString(),
    );
    expect([member, id, token, group]).toStrictEqual([
      '2.1767225600123|job|1',
      'job|1',
      '2.1767225600123',
      'nil',
    ]);
    const grouped = encodeRecord({ ...claimHeader(), group: 'g1', groupDue: 5 }, Buffer.from('x'));
    const parts = ((await run('member', grouped, 'j2')) as Buffer[]).map((b) => b.toString());
    expect(parts).toStrictEqual(['1.1000|j2\u0000g1', 'j2', '1.1000', 'g1']);
  });
});

function claimHeader(): RecordHeader {
  return { ...loadRecordVectors()[0]!.full, attempts: 1, claims: 1, claimedAt: 1000, runDue: 900, holder: 1 };
}
