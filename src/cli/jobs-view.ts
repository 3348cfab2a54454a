/** How the CLI prints jobs: one row per job in lists, every field for `show`, plain JSON for --json. */
import type { ListState } from '../operations/list.js';
import type { JobInfo } from '../queue.js';
import { toPlain } from '../dashboard/serialize.js';
import { cut, relative, type Colors } from './format.js';

/** A job as plain JSON (dates as ISO strings, BigInt and friends made printable). */
export function jobJson(info: JobInfo<unknown>): unknown {
  return toPlain(info);
}

/** Header and cells of a list row for `state`. */
export function listRow(state: ListState, info: JobInfo<unknown>, now: number, c: Colors): string[] {
  const attempts = `${info.attempts}/${info.maxAttempts}`;
  if (state === 'scheduled' || state === 'waiting-children') {
    return [
      info.id,
      relative(info.runAt.getTime(), now),
      info.group ?? priorityText(info.priority),
      attempts,
      c.dim(preview(info, 60)),
    ];
  }
  if (state === 'completed') {
    return [
      info.id,
      info.completedAt ? relative(info.completedAt.getTime(), now) : '?',
      c.dim('result' in info ? cut(JSON.stringify(toPlain(info.result)) ?? '', 60) : ''),
    ];
  }
  if (state === 'cancelled') {
    return [info.id, info.cancelledAt ? relative(info.cancelledAt.getTime(), now) : '?'];
  }
  if (state === 'active') {
    return [
      info.id,
      info.lease?.workerId ?? '?',
      info.lease ? relative(info.lease.deadline.getTime(), now) : '?',
      attempts,
    ];
  }
  return [
    info.id,
    info.diedAt ? relative(info.diedAt.getTime(), now) : '?',
    attempts,
    c.red(
      cut(
        info.lastError ? `${info.lastError.name}: ${info.lastError.message}` : (info.decodeError ?? ''),
        70,
      ),
    ),
  ];
}

/** Column titles for `state`. */
export function listHeader(state: ListState): string[] {
  if (state === 'scheduled') return ['id', 'due', 'group/priority', 'attempts', 'payload'];
  // A parent's own due time: it runs then, or when its last child completed if later.
  if (state === 'waiting-children')
    return ['id', 'due (at the earliest)', 'group/priority', 'attempts', 'payload'];
  if (state === 'active') return ['id', 'worker', 'lease until', 'attempts'];
  if (state === 'completed') return ['id', 'completed', 'result'];
  if (state === 'cancelled') return ['id', 'cancelled'];
  return ['id', 'died', 'attempts', 'reason'];
}

/** Column titles of a search page (jobs of any state). */
export function searchHeader(): string[] {
  return ['id', 'state', 'when', 'group/priority', 'attempts', 'payload or result'];
}

/** The time a search's `from` and `to` bound: due, started, or ended. */
function searchTime(info: JobInfo<unknown>): number {
  if (info.state === 'active' && info.lease) return info.lease.startedAt.getTime();
  return (info.finishedAt ?? info.runAt).getTime();
}

/** A search page's row: any state, its time (due, started or ended) relative to `now`. */
export function searchRow(info: JobInfo<unknown>, now: number, c: Colors): string[] {
  const final = info.state === 'completed' || info.state === 'cancelled';
  const shown =
    info.state === 'completed'
      ? 'result' in info
        ? cut(JSON.stringify(toPlain(info.result)) ?? '', 60)
        : ''
      : final
        ? ''
        : preview(info, 60);
  const state =
    info.state === 'dead' ? c.red(info.state) : info.state === 'active' ? c.green(info.state) : info.state;
  return [
    info.id,
    state,
    relative(searchTime(info), now),
    info.group ?? priorityText(info.priority),
    final ? '' : `${info.attempts}/${info.maxAttempts}`,
    c.dim(shown),
  ];
}

/**
 * A priority as the lists show it where the job has no group (a grouped job shows its group: it
 * has no priority): blank for the default 0, so set ones stand out.
 */
function priorityText(priority: number): string {
  return priority === 0 ? '' : String(priority);
}

function preview(info: JobInfo<unknown>, max: number): string {
  if (info.decodeError !== undefined) return `cannot decode: ${info.decodeError}`;
  return cut(JSON.stringify(toPlain(info.payload)) ?? '', max);
}

/** Every field of a job, as aligned lines. */
export function detailLines(info: JobInfo<unknown>, now: number, c: Colors): string[] {
  const stateColour =
    info.state === 'dead'
      ? c.red
      : info.state === 'active' || info.state === 'completed'
        ? c.green
        : info.state === 'cancelled'
          ? c.dim
          : c.blue;
  const at = (d: Date): string => `${d.toISOString()} (${relative(d.getTime(), now)})`;
  const lines: Array<[string, string]> = [
    ['id', c.bold(info.id)],
    ['state', stateColour(info.state)],
  ];
  // A completed or cancelled job keeps only a final record: no due time, attempts or payload.
  const final = info.state === 'completed' || info.state === 'cancelled';
  if (!final) {
    lines.push(['due', at(info.runAt)]);
    lines.push(['attempts', `${info.attempts} of ${info.maxAttempts}`]);
    // A grouped job has no priority: its group is what matters.
    if (info.group !== undefined) lines.push(['group', info.group]);
    else lines.push(['priority', String(info.priority)]);
  }
  if (info.createdAt) lines.push(['created', info.createdAt.toISOString()]);
  if (info.version !== undefined) lines.push(['version', String(info.version)]);
  if (info.lease) {
    lines.push(['worker', info.lease.workerId]);
    lines.push(['started', info.lease.startedAt.toISOString()]);
    lines.push(['lease until', at(info.lease.deadline)]);
  }
  if ('progress' in info) lines.push(['progress', JSON.stringify(info.progress) ?? '']);
  if (info.diedAt) lines.push(['died', at(info.diedAt)]);
  if (info.completedAt) lines.push(['completed', at(info.completedAt)]);
  if (info.cancelledAt) lines.push(['cancelled', at(info.cancelledAt)]);
  const width = Math.max(...lines.map(([k]) => k.length));
  const out = lines.map(([k, v]) => `${c.dim(k.padEnd(width))}  ${v}`);
  if (!final) {
    out.push(c.dim('payload'));
    out.push(
      info.decodeError !== undefined
        ? c.red(`  cannot decode: ${info.decodeError}`)
        : (JSON.stringify(toPlain(info.payload), null, 2) ?? 'undefined').replace(/^/gm, '  '),
    );
  } else if ('result' in info || info.decodeError !== undefined) {
    out.push(c.dim('result'));
    out.push(
      info.decodeError !== undefined
        ? c.red(`  cannot decode: ${info.decodeError}`)
        : (JSON.stringify(toPlain(info.result), null, 2) ?? 'undefined').replace(/^/gm, '  '),
    );
  }
  if (info.lastError) {
    out.push(c.dim(`last error (attempt ${info.lastError.attempt ?? '?'})`));
    out.push(c.red(`  ${info.lastError.name}: ${info.lastError.message}`));
  }
  if (info.logs && info.logs.length > 0) {
    out.push(c.dim(`log (${info.logs.length} line${info.logs.length === 1 ? '' : 's'})`));
    for (const entry of info.logs) {
      out.push(`  ${c.dim(`#${entry.attempt} ${entry.at.toISOString()}`)}  ${entry.line}`);
    }
  }
  return out;
}
