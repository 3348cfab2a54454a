/**
 * The relative links of a Markdown text (links, images, and HTML `src`/`href`), and which of them
 * a list of files does not hold: used to check that README.md's links resolve in the tarball.
 */
import { posix } from 'node:path';

/** A link of the text that points into the package, with the line it is on. */
export interface RelativeLink {
  target: string;
  /** The file it names, relative to the package root, without `#fragment` or `?query`. */
  file: string;
  line: number;
}

/** Every relative link (not a URL, not a bare `#anchor`) outside code blocks and code spans. */
export function relativeLinks(markdown: string): RelativeLink[] {
  const out: RelativeLink[] = [];
  let inFence = false;
  markdown.split('\n').forEach((text, i) => {
    if (/^\s*```/.test(text)) inFence = !inFence;
    if (inFence) return;
    const prose = text.replace(/`[^`]*`/g, '');
    const targets = [
      ...[...prose.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]!),
      ...[...prose.matchAll(/\b(?:src|href)=["']([^"']+)["']/g)].map((m) => m[1]!),
      // Reference definitions: [name]: target
      ...[...prose.matchAll(/^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/g)].map((m) => m[1]!),
    ];
    for (const target of targets) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('#') || target.startsWith('//')) continue;
      const file = posix.normalize(decodeURIComponent(target.replace(/[#?].*$/, '')));
      out.push({ target, file: file.replace(/^\.\//, ''), line: i + 1 });
    }
  });
  return out;
}

/** The links whose file is not in `files` (paths relative to the package root). */
export function unresolved(links: readonly RelativeLink[], files: readonly string[]): RelativeLink[] {
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
