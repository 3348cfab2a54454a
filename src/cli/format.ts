/** Colours (only when writing to a terminal), times and tables for the CLI's text output. */

/** Colour functions; identity when colour is off. */
export interface Colors {
  bold: (s: string) => string;
  dim: (s: string) => string;
  red: (s: string) => string;
  green: (s: string) => string;
  yellow: (s: string) => string;
  blue: (s: string) => string;
  cyan: (s: string) => string;
}

/** Colours on when `tty` and neither NO_COLOR nor TERM=dumb say otherwise; FORCE_COLOR forces them. */
export function colors(tty: boolean): Colors {
  const force = process.env['FORCE_COLOR'];
  const on =
    force !== undefined && force !== '0' && force !== 'false'
      ? true
      : tty && process.env['NO_COLOR'] === undefined && process.env['TERM'] !== 'dumb';
  const wrap =
    (open: number, close: number) =>
    (s: string): string =>
      on ? `\u001b[${open}m${s}\u001b[${close}m` : s;
  return {
    bold: wrap(1, 22),
    dim: wrap(2, 22),
    red: wrap(31, 39),
    green: wrap(32, 39),
    yellow: wrap(33, 39),
    blue: wrap(34, 39),
    cyan: wrap(36, 39),
  };
}

/** "in 4.2 s" / "3 min 2 s ago" relative to `now`. */
export function relative(at: number, now: number): string {
  const d = at - now;
  const a = Math.abs(d);
  const s = Math.round(a / 1_000);
  const text =
    a < 1_000
      ? `${Math.round(a)} ms`
      : a < 59_950
        ? `${(a / 1_000).toFixed(1)} s`
        : s < 3_600
          ? `${Math.floor(s / 60)} min ${s % 60} s`
          : s < 172_800
            ? `${(a / 3_600_000).toFixed(1)} h`
            : `${(a / 86_400_000).toFixed(1)} d`;
  return d >= 0 ? `in ${text}` : `${text} ago`;
}

// eslint-disable-next-line no-control-regex -- matching the colour escapes this file writes
const ANSI = /\u001b\[\d+m/g;

/** Columns padded to their widest cell (colour escapes not counted); `right` lists right-aligned columns. */
export function table(rows: string[][], right: ReadonlySet<number> = new Set()): string {
  const widths: number[] = [];
  for (const row of rows) {
    row.forEach((cell, i) => (widths[i] = Math.max(widths[i] ?? 0, cell.replace(ANSI, '').length)));
  }
  return rows
    .map((row) =>
      row
        .map((cell, i) => {
          const pad = ' '.repeat((widths[i] ?? 0) - cell.replace(ANSI, '').length);
          return right.has(i) ? pad + cell : i === row.length - 1 ? cell : cell + pad;
        })
        .join('  '),
    )
    .join('\n');
}

/** Cut `text` to `max` characters with an ellipsis. */
export function cut(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}
