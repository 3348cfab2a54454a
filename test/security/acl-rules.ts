/**
 * The ACL rules of docs/SECURITY.md, read from the document itself so that the rules users copy
 * are the rules the tests apply.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Redis, type RedisOptions } from 'ioredis';
import { afterAll, afterEach, beforeAll } from 'vitest';
import type { Job } from '../../src/index.js';
import { useRedis } from '../support/fixtures.js';

/** One `user ...` line of an ACL file. */
export interface Rule {
  user: string;
  password: string;
  args: string[];
}

/** The lines of every ```acl block of docs/SECURITY.md, split into ACL SETUSER arguments. */
export function documentedRules(): Map<string, Rule> {
  const doc = readFileSync(fileURLToPath(new URL('../../docs/SECURITY.md', import.meta.url)), 'utf8');
  const blocks = [...doc.matchAll(/```acl\n([\s\S]*?)```/g)].map((m) => m[1]!);
  if (blocks.length === 0) throw new Error('docs/SECURITY.md has no ```acl block');
  const rules = new Map<string, Rule>();
  for (const line of blocks
    .join('\n')
    .split('\n')
    .filter((l) => l.trim() !== '')) {
    const [kw, user, ...args] = line.match(/\([^)]*\)|\S+/g) ?? [];
    if (kw !== 'user' || user === undefined) throw new Error(`not an ACL file line: ${line}`);
    const password = args.find((a) => a.startsWith('>'))?.slice(1);
    if (password === undefined) throw new Error(`rule for ${user} has no password`);
    rules.set(user, { user, password, args });
  }
  return rules;
}

/** Create every documented user on `admin`'s server. */
export async function applyRules(admin: Redis, rules: Map<string, Rule>): Promise<void> {
  for (const rule of rules.values()) {
    await admin.call('ACL', 'SETUSER', rule.user, 'reset', ...rule.args);
  }
}

/** The payload of the jobs a role test runs: one of each fate. */
export interface KindPayload {
  kind: 'ok' | 'flaky' | 'doomed' | 'long';
}

/**
 * A handler that gives each job the fate its kind names: 'ok' completes, 'flaky' fails its first
 * attempt, 'doomed' always fails, 'long' extends its lease, reports progress `{ step: 1 }` and then
 * runs until the worker closes (and releases it). `seen` lists `id#attempt` of every run.
 */
export function everyFate(): {
  handler: (job: Job<KindPayload>) => Promise<void>;
  seen: string[];
  longStarted: () => boolean;
} {
  const seen: string[] = [];
  let longStarted = false;
  return {
    seen,
    longStarted: () => longStarted,
    handler: async (job) => {
      seen.push(`${job.id}#${job.attempt}`);
      if (job.payload.kind === 'flaky' && job.attempt === 1) throw new Error('first try fails');
      if (job.payload.kind === 'doomed') throw new Error('always fails');
      if (job.payload.kind === 'long') {
        await job.extendLease(10_000);
        await job.progress({ step: 1 });
        longStarted = true;
        await new Promise((resolve) => setTimeout(resolve, 60_000));
      }
    },
  };
}

/**
 * A redis-server for the file with every documented user created. `as(role)` connects as that
 * role; `cleanups` run after each test, and then the server is flushed.
 */
export function useAclServer(): {
  rules: Map<string, Rule>;
  admin: () => Redis;
  as: (role: string, extra?: RedisOptions) => RedisOptions;
  cleanups: Array<() => Promise<unknown>>;
} {
  const redis = useRedis();
  const rules = documentedRules();
  const cleanups: Array<() => Promise<unknown>> = [];
  let admin: Redis | undefined;
  beforeAll(async () => {
    admin = new Redis(redis.url());
    await applyRules(admin, rules);
  });
  afterEach(async () => {
    for (const close of cleanups.splice(0).reverse()) await close().catch(() => undefined);
    await admin?.flushall();
  });
  afterAll(async () => {
    await admin?.quit();
  });
  return {
    rules,
    cleanups,
    admin: () => {
      if (!admin) throw new Error('the ACL server is not started yet');
      return admin;
    },
    as: (role, extra = {}) => {
      const rule = rules.get(role);
      if (!rule) throw new Error(`docs/SECURITY.md has no rule for ${role}`);
      const url = new URL(redis.url());
      return {
        host: url.hostname,
        port: Number(url.port),
        username: rule.user,
        password: rule.password,
        ...extra,
      };
    },
  };
}
