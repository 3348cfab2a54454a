/**
 * The relative links of a Markdown text (links, images, and HTML `src`/`href`), and which of them
 * a list of files does not hold: used to check that the links of every Markdown file the package
 * ships (README.md, CHANGELOG.md, docs/*.md, ...) resolve in the tarball, #fragments included.
 */
import { posix } from 'node:path';

/** A link of the text that points into the package, with the line it is on. */
export interface RelativeLink {
  target: string;
  /** The file it names, relative to the package root, without `#fragment` or `?query`. */
  file: string;
  line: number;
}

/** Each line of a Markdown text outside fenced code blocks, with its code spans taken out. */
function proseLines(markdown: string): Array<{ prose: string; line: number }> {
  const out: Array<{ prose: string; line: number }> = [];
  let inFence = false;
  markdown.split('\n').forEach((text, i) => {
    if (/^\s*```/.test(text)) inFence = !inFence;
    if (!inFence) out.push({ prose: text.replace(/`[^`]*`/g, ''), line: i + 1 });
  });
  return out;
}

/**
 * Every relative link (not a URL, not a bare `#anchor`) outside code blocks and code spans of the
 * Markdown file `from` (a path relative to the package root): each file is resolved from `from`'s
 * folder, so `PROTOCOL.md` in docs/SECURITY.md is docs/PROTOCOL.md.
 */
export function relativeLinks(markdown: string, from = 'README.md'): RelativeLink[] {
  const out: RelativeLink[] = [];
  const folder = posix.dirname(from);
  for (const { prose, line } of proseLines(markdown)) {
    const targets = [
      ...[...prose.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]!),
      ...[...prose.matchAll(/\b(?:src|href)=["']([^"']+)["']/g)].map((m) => m[1]!),
      // Reference definitions: [name]: target
      ...[...prose.matchAll(/^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/g)].map((m) => m[1]!),
    ];
    for (const target of targets) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('#') || target.startsWith('//')) continue;
      const file = posix.normalize(posix.join(folder, decodeURIComponent(target.replace(/[#?].*$/, ''))));
      out.push({ target, file: file.replace(/^\.\//, ''), line });
    }
  }
  return out;
}

/** The links of Markdown file `from` to a heading of its own (`[Pause](#pause-and-resume)`). */
export function ownAnchorLinks(markdown: string, from: string): RelativeLink[] {
  return proseLines(markdown).flatMap(({ prose, line }) =>
    [...prose.matchAll(/\]\(\s*(#[^)\s]+)\s*\)/g)].map((m) => ({ target: m[1]!, file: from, line })),
  );
}

/** The links whose file is not in `files` (paths relative to the package root). */
export function unresolved<L extends RelativeLink>(links: readonly L[], files: readonly string[]): L[] {
  const present = new Set(files);
  const directories = new Set(
    files.flatMap((f) =>
      f
        .split('/')
        .slice(0, -1)
        .map((_, i, parts) => parts.slice(0, i + 1).join('/')),
    ),
  );
  return links.filter((link) => {
    const file = link.file.replace(/\/$/, '');
    return file.startsWith('../') || (!present.has(file) && !directories.has(file));
  });
}

/** The anchors GitHub gives the headings of a Markdown text (`## Upgrading from 0.1` -> upgrading-from-01). */
export function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let inFence = false;
  for (const line of markdown.split('\n')) {
    if (/^\s*```/.test(line)) inFence = !inFence;
    const m = inFence ? null : /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const slug = m[1]!
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    anchors.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return anchors;
}

/** The fragment of a link (`docs/CLUSTER.md#partitions` -> partitions), if it has one. */
export function fragmentOf(link: RelativeLink): string | undefined {
  const i = link.target.indexOf('#');
  return i < 0 ? undefined : decodeURIComponent(link.target.slice(i + 1));
}
