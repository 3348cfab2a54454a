/**
 * A worker's claims are sent with their KEYS and settings encoded once (src/redis/prepared-command.ts):
 * they must run as any other script call does, as FCALL or by EVALSHA, after the server lost the
 * library or the script, and on a client with a keyPrefix (which takes the ordinary path).
 */
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { Queue } from '../../src/index.js';
import { claimPrepared, prepareClaim, type PreparedClaim } from '../../src/operations/claim.js';
import { ZSET_LAYOUT } from '../../src/operations/wheel.js';
import { registerHolder } from '../../src/operations/worker-register.js';
import { queueKeys } from '../../src/redis/keys.js';
import { setScriptTransport } from '../../src/redis/scripts.js';
import { inspector, perTestServers, uniqueQueue } from '../support/fixtures.js';

const { cleanup, server } = perTestServers();

function open(url: string, prefix?: string): Redis {
  const r = prefix === undefined ? inspector(url) : new Redis(url, { keyPrefix: prefix });
  cleanup.push(async () => void (await r.quit()));
  return r;
}

function prepared(name: string): PreparedClaim {
  return prepareClaim(queueKeys(name), {
    strategy: 'zpopmin',
    leaseMs: 15_000,
    deadMaxCount: 1_000,
    deadMaxAgeMs: 60_000,
    rate: { max: 0, perMs: 0 },
    eventsCap: 0,
    zmscore: true,
    layout: ZSET_LAYOUT,
  });
}

/** Add `payloads` due now to queue `name` through `client`. */
async function addNow(client: Redis, name: string, payloads: string[]): Promise<void> {
  const queue = new Queue<string>(name, { connection: client });
  for (const p of payloads) await queue.add(p);
}

async function calls(r: Redis, command: string): Promise<number> {
  return Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(await r.info('commandstats'))?.[1] ?? 0);
}

describe('a prepared claim', () => {
  it('claims and acks as FCALL, and again after FUNCTION FLUSH', async () => {
    const s = await server();
    const r = open(s.url);
    const name = uniqueQueue('prep');
    const keys = queueKeys(name);
    await addNow(r, name, ['a', 'b']);
    const claim = prepared(name);
    const holder = await registerHolder(r, keys, 'w1');

    const first = await claimPrepared(r, claim, 1, holder);
    expect(first.jobs.map((j) => j.payload.toString())).toEqual(['"a"']);
    await r.call('FUNCTION', 'FLUSH');
    const ack = {
      member: first.jobs[0]!.member,
      knownDeadline: first.jobs[0]!.deadline,
      hadError: false,
      progressed: false,
    };
    const second = await claimPrepared(r, claim, 1, holder, [ack]);

    expect(second.acks).toEqual([{ status: 'ok' }]);
    expect(second.jobs.map((j) => j.payload.toString())).toEqual(['"b"']);
    expect(await r.zrange(keys.leases, 0, -1)).toEqual([second.jobs[0]!.member]);
    expect(await r.zrange(keys.completed, 0, -1)).toEqual([first.jobs[0]!.id]);
    expect(await calls(r, 'fcall')).toBeGreaterThanOrEqual(3);
    expect(await calls(r, 'evalsha')).toBe(0);
  });

  it('claims by EVALSHA, and by EVAL after SCRIPT FLUSH', async () => {
    const s = await server();
    const r = open(s.url);
    setScriptTransport('eval');
    cleanup.push(() => Promise.resolve(setScriptTransport('auto')));
    const name = uniqueQueue('prep');
    await addNow(r, name, ['a', 'b']);
    const claim = prepared(name);
    const holder = await registerHolder(r, queueKeys(name), 'w1');

    expect((await claimPrepared(r, claim, 1, holder)).jobs).toHaveLength(1);
    await r.script('FLUSH');
    expect((await claimPrepared(r, claim, 1, holder)).jobs).toHaveLength(1);
    expect(await calls(r, 'evalsha')).toBeGreaterThanOrEqual(2);
    expect(await calls(r, 'eval')).toBeGreaterThanOrEqual(1);
    expect(await calls(r, 'fcall')).toBe(0);
  });

  it('goes through a wrapped callBuffer, so a wrapper that records script calls sees the claim', async () => {
    const s = await server();
    const r = open(s.url);
    const name = uniqueQueue('prep');
    await addNow(r, name, ['a']);
    const holder = await registerHolder(r, queueKeys(name), 'w1');
    const seen: string[] = [];
    const own = r.callBuffer.bind(r);
    (r as unknown as { callBuffer: (...args: unknown[]) => Promise<unknown> }).callBuffer = (...args) => {
      seen.push(String(args[0]));
      return (own as (...a: unknown[]) => Promise<unknown>)(...args);
    };

    const out = await claimPrepared(r, prepared(name), 1, holder);

    expect(out.jobs).toHaveLength(1);
    expect(seen).toEqual(['FCALL']);
  });

  it('goes the ordinary way on a client with a keyPrefix, whose keys it prefixes', async () => {
    const s = await server();
    const plain = open(s.url);
    const prefixed = open(s.url, 'pfx:');
    const name = uniqueQueue('prep');
    const keys = queueKeys(name);
    await addNow(prefixed, name, ['a']);
    const holder = await registerHolder(prefixed, keys, 'w1');

    const out = await claimPrepared(prefixed, prepared(name), 1, holder);

    expect(out.jobs).toHaveLength(1);
    expect(await plain.zrange(`pfx:${keys.leases}`, 0, -1)).toEqual([out.jobs[0]!.member]);
    expect(await plain.exists(keys.leases, keys.waiting)).toBe(0);
  });
});
