/**
 * docs/PROTOCOL.md's "Script reference" is generated from the script headers
 * (scripts/protocol-tables.ts): one source. This fails when someone edits a header without
 * regenerating, or edits the generated tables by hand.
 */
import { readFileSync } from 'node:fs';
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
});
