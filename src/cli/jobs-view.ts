/** How the CLI prints jobs: one row per job in lists, every field for `show`, plain JSON for --json. */
import type { JobInfo } from '../queue.js';
import { toPlain } from '../dashboard/serialize.js';
import { cut, relative, type Colors } from './format.js';

/** A job as plain JSON (dates as ISO strings, BigInt and friends made printable). */
export function jobJson(info: JobInfo<unknown>): unknown {
  return toPlain(info);
}

/** Header and cells of a list row for `state`. */
export function listRow(
  state: 'scheduled' | 'active' | 'dead',
  info: JobInfo<unknown>,
  now: number,
  c: Colors,
): string[] {
  const attempts = `${info.attempts}/${info.maxAttempts}`;
  if (state === 'scheduled')
    return [info.id, relative(info.runAt.getTime(), now), attempts, c.dim(preview(info, 60))];
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
export function listHeader(state: 'scheduled' | 'active' | 'dead'): string[] {
  if (state === 'scheduled') return ['id', 'due', 'attempts', 'payload'];
  if (state === 'active') return ['id', 'worker', 'lease until', 'attempts'];
  return ['id', 'died', 'attempts', 'reason'];
}

function preview(info: JobInfo<unknown>, max: number): string {
  if (info.decodeError !== undefined) return `cannot decode: ${info.decodeError}`;
  return cut(JSON.stringify(toPlain(info.payload)) ?? '', max);
}

/** Every field of a job, as aligned lines. */
export function detailLines(info: JobInfo<unknown>, now: number, c: Colors): string[] {
  const stateColour = info.state === 'dead' ? c.red : info.state === 'active' ? c.green : c.blue;
  const lines: Array<[string, string]> = [
    ['id', c.bold(info.id)],
    ['state', stateColour(info.state)],
    ['due', `${info.runAt.toISOString()} (${relative(info.runAt.getTime(), now)})`],
    ['attempts', `${info.attempts} of ${info.maxAttempts}`],
  ];
  if (info.createdAt) lines.push(['created', info.createdAt.toISOString()]);
  if (info.version !== undefined) lines.push(['version', String(info.version)]);
  if (info.lease) {
    lines.push(['worker', info.lease.workerId]);
    lines.push(['started', info.lease.startedAt.toISOString()]);
    lines.push([
      'lease until',
      `${info.lease.deadline.toISOString()} (${relative(info.lease.deadline.getTime(), now)})`,
    ]);
  }
  if ('progress' in info) lines.push(['progress', JSON.stringify(info.progress) ?? '']);
  if (info.diedAt)
    lines.push(['died', `${info.diedAt.toISOString()} (${relative(info.diedAt.getTime(), now)})`]);
  const width = Math.max(...lines.map(([k]) => k.length));
  const out = lines.map(([k, v]) => `${c.dim(k.padEnd(width))}  ${v}`);
  out.push(c.dim('payload'));
  out.push(
    info.decodeError !== undefined
      ? c.red(`  cannot decode: ${info.decodeError}`)
      : (JSON.stringify(toPlain(info.payload), null, 2) ?? 'undefined').replace(/^/gm, '  '),
  );
  if (info.lastError) {
    out.push(c.dim(`last error (attempt ${info.lastError.attempt ?? '?'})`));
    out.push(c.red(`  ${info.lastError.name}: ${info.lastError.message}`));
  }
  return out;
}
