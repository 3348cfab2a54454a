/**
 * The README's "Where it runs" snippets are cut from the programs in examples/, which
 * `npm run examples` type-checks and runs: this keeps them so. Each snippet, without its imports
 * and split at `// ...` gaps, must appear in some example once whitespace, comments and trailing
 * commas (which depend on line wrapping) are set aside.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const root = new URL('../', import.meta.url);
const readme = readFileSync(new URL('README.md', root), 'utf8');
const start = readme.indexOf('## Where it runs');
const section = readme.slice(start, readme.indexOf('\n## ', start + 1));
const snippets = [...section.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!);

/** Code as a string without whitespace, line comments, and commas before a closing bracket. */
function normalize(code: string): string {
  return code
    .split('\n')
    .map((line) => line.replace(/\/\/.*$/, ''))
    .join('')
    .replace(/\s+/g, '')
    .replace(/,(?=[)\]}])/g, '');
}

const examples = readdirSync(new URL('examples/', root), { recursive: true, encoding: 'utf8' })
  .filter((file) => file.endsWith('.ts') && !file.endsWith('.test.ts'))
  .map((file) => ({ file, code: normalize(readFileSync(new URL(`examples/${file}`, root), 'utf8')) }));

describe('README: where it runs', () => {
  it('has its snippets', () => {
    expect(start).toBeGreaterThan(0);
    expect(snippets.length).toBeGreaterThanOrEqual(7);
  });

  it.each(snippets.map((code, i) => [i + 1, code] as const))('snippet %i is in an example', (_, code) => {
    const pieces = code
      .split('\n')
      .filter((line) => !line.startsWith('import '))
      .join('\n')
      .split(/^\s*\/\/ \.\.\.$/m)
      .map(normalize)
      .filter((piece) => piece !== '');
    for (const piece of pieces) {
      const home = examples.find((example) => example.code.includes(piece));
      expect(home, `not found in examples/: ${piece}`).toBeDefined();
    }
  });
});
