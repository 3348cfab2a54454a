/**
 * What the repository's documents offer to be cited: the files under docs/, the numbered sections
 * of each (headings such as "### 3.2 The record"), and the numbered invariants of docs/DESIGN.md §2.
 * Used by the tests that keep citations in comments and docs from dangling.
 */
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The section numbers of a Markdown file's headings: "## 5. How ..." gives 5, "### 5.3 Never" 5.3. */
export function sectionNumbers(markdown: string): Set<string> {
  const numbers = new Set<string>();
  for (const m of markdown.matchAll(/^#{1,6}[ \t]+(\d+(?:\.\d+)*)\.?[ \t]/gm)) numbers.add(m[1]!);
  return numbers;
}

/** The numbers of the invariants in docs/DESIGN.md: the numbered items of its section 2. */
export function invariantNumbers(design: string): Set<string> {
  const start = design.search(/^## 2\. /m);
  if (start < 0) return new Set();
  const rest = design.slice(start + 1);
  const end = rest.search(/^## /m);
  const section = end < 0 ? rest : rest.slice(0, end);
  return new Set([...section.matchAll(/^(\d+)\. \*\*/gm)].map((m) => m[1]!));
}

const TEXT = /\.(ts|mts|mjs|js|lua|md|json|yaml|yml|sh)$/;
const SKIP = new Set(['node_modules', 'dist', 'results', '.git']);

/** Every text file under the given top-level folders of the repository, as paths relative to it. */
export function textFiles(...folders: string[]): string[] {
  const out: string[] = [];
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      if (SKIP.has(name)) continue;
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (TEXT.test(name)) out.push(relative(ROOT, path));
    }
  };
  for (const folder of folders) if (existsSync(join(ROOT, folder))) walk(join(ROOT, folder));
  return out;
}

export function read(path: string): string {
  return readFileSync(join(ROOT, path), 'utf8');
}

/** The 1-based line of an offset in a text, for messages that point at the citation. */
export function lineOf(text: string, offset: number): number {
  return text.slice(0, offset).split('\n').length;
}
