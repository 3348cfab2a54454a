/**
 * The ACL rules of docs/SECURITY.md, read from the document itself so that the rules users copy
 * are the rules the tests apply.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Redis } from 'ioredis';

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
