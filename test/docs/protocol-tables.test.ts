/**
 * docs/PROTOCOL.md's "Script reference" is generated from the script headers
 * (scripts/protocol-tables.ts): one source. This fails when someone edits a header without
 * regenerating, or edits the generated tables by hand, and when a script a client in another
 * language calls (clients/python/, the scripts docs/ARCHITECTURE.md §4.11 marks P) is not in it.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  PROTOCOL_PATH,
  REFERENCE_SCRIPTS,
  describeScript,
  expectedProtocol,
} from '../../scripts/protocol-tables.js';

describe('docs/PROTOCOL.md script reference', () => {
  it('is what scripts/protocol-tables.ts generates from the headers (run it to update)', async () => {
    expect(readFileSync(PROTOCOL_PATH, 'utf8')).toBe(await expectedProtocol());
  });

  it('covers every script a producer or worker calls, each with its KEYS, ARGV and reply', () => {
    for (const script of REFERENCE_SCRIPTS) {
      const { rows, reply } = describeScript(script);
      expect(
        rows.some(([name]) => name.startsWith('KEYS[')),
        script,
      ).toBe(true);
      expect(
        rows.some(([name]) => name.startsWith('ARGV[')),
        script,
      ).toBe(true);
      expect(reply.length, script).toBeGreaterThan(10);
    }
    // The extend row says the flags value comes before the members (issue 32).
    const extend = describeScript('extend').rows.find(([name]) => name === 'ARGV[2]');
    expect(extend?.[1]).toMatch(/flags, always present/);
  });

  it('is the set of scripts the Python client calls, and those docs/ARCHITECTURE.md marks P', () => {
    const root = join(import.meta.dirname, '../..');
    const python = readFileSync(join(root, 'clients/python/delayq_client.py'), 'utf8');
    const called = new Set([...python.matchAll(/\.call\("([\w-]+)"/g)].map((m) => m[1]!));
    expect([...called].sort()).toEqual([...REFERENCE_SCRIPTS].sort());
    const architecture = readFileSync(join(root, 'docs/ARCHITECTURE.md'), 'utf8');
    const marked = [...architecture.matchAll(/^\| `([\w-]+)` \*\*P\*\*/gm)].map((m) => m[1]!);
    expect(marked.sort()).toEqual([...REFERENCE_SCRIPTS].sort());
  });
});
