/**
 * The dashboard's read API (GET /api/...): the queues with their counts, one queue's overview and
 * charts, a page of jobs in one state, the groups panel and one job. Each answers a plain JSON
 * value, read with ZRANGE/ZCOUNT/SCAN only.
 */
import type { ListState } from '../operations/list.js';
import type { JobInfo } from '../queue.js';
import { countOf } from '../queue/reads.js';
import { HttpError } from './exchange.js';
import { decodeSegment } from './paths.js';
import type { DashboardQueues } from './queues.js';
import { searchPage } from './search.js';
import { toPlain } from './serialize.js';

const STATES = [
  'scheduled',
  'waiting-children',
  'active',
  'dead',
  'completed',
  'cancelled',
] as const satisfies readonly ListState[];
const MAX_PAGE = 100;

/** The JSON value of the API path `path` (under /api/); a 404 HttpError for any other path. */
export async function readApi(
  queues: DashboardQueues,
  path: string,
  params: URLSearchParams,
): Promise<unknown> {
  if (path === '/api/queues') return listQueues(queues);
  let m = /^\/api\/queues\/([^/]+)$/.exec(path);
  if (m) return overview(queues, decodeSegment(m[1]!));
  m = /^\/api\/queues\/([^/]+)\/jobs$/.exec(path);
  if (m) return jobs(queues, decodeSegment(m[1]!), params);
  m = /^\/api\/queues\/([^/]+)\/search$/.exec(path);
  if (m) return searchPage((await queues.get(decodeSegment(m[1]!))).queue, params, summary);
  m = /^\/api\/queues\/([^/]+)\/groups$/.exec(path);
  if (m) return groups(queues, decodeSegment(m[1]!), params);
  m = /^\/api\/queues\/([^/]+)\/jobs\/([^/]+)$/.exec(path);
  if (m) {
    const info = await (await queues.get(decodeSegment(m[1]!))).queue.get(decodeSegment(m[2]!));
    if (!info) throw new HttpError(404, `no job '${decodeSegment(m[2]!)}'`);
    return toPlain(info);
  }
  throw new HttpError(404, 'not found');
}

async function listQueues(queues: DashboardQueues): Promise<unknown> {
  const names = await queues.names();
  const rows = await Promise.all(
    names.map(async (name) => {
      // A queue the dashboard was told to show that nothing has opened yet: empty, not an error.
      const inspector = await queues.get(name).catch((err: unknown) => {
        if (err instanceof HttpError && err.status === 404) return null;
        throw err;
      });
      if (!inspector)
        return {
          name,
          counts: { scheduled: 0, due: 0, held: 0, waitingChildren: 0, active: 0, dead: 0 },
          strategy: null,
          paused: false,
        };
      const { scheduled, due, held, waitingChildren, active, dead, paused } = await inspector.counts();
      const strategy = await inspector.strategy();
      return { name, counts: { scheduled, due, held, waitingChildren, active, dead }, strategy, paused };
    }),
  );
  return { queues: rows };
}

async function overview(queues: DashboardQueues, name: string): Promise<unknown> {
  const inspector = await queues.get(name);
  // The counts and the due chart from the same reads, so the page's figures agree.
  const { now, nextDue: next, paused, histogram: due, ...counts } = await inspector.figures();
  const [strategy, series] = await Promise.all([inspector.strategy(), inspector.activity(now, 300)]);
  const activity = {
    t: series.map((s) => s.t / 1000),
    completed: series.map((s) => s.completed),
    failed: series.map((s) => s.failed),
    dead: series.map((s) => s.dead),
    latenessAvg: series.map((s) => (s.latenessCount ? s.latenessSumMs / s.latenessCount : null)),
    latenessP99: series.map((s) => s.latenessP99Ms),
  };
  return { name, now, counts, nextDue: next, due, strategy, paused, activity };
}

async function jobs(queues: DashboardQueues, name: string, params: URLSearchParams): Promise<unknown> {
  const state = params.get('state') ?? 'scheduled';
  if (!(STATES as readonly string[]).includes(state))
    throw new HttpError(400, `state must be one of ${STATES.join(', ')}`);
  const offset = Number(params.get('offset') ?? 0);
  const limit = Number(params.get('limit') ?? 20);
  if (!Number.isInteger(offset) || offset < 0) throw new HttpError(400, 'offset must be a whole number >= 0');
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE)
    throw new HttpError(400, `limit must be 1..${MAX_PAGE}`);
  const inspector = await queues.get(name);
  const [items, counts] = await Promise.all([
    inspector.list(state as ListState, { offset, limit }),
    inspector.counts(),
  ]);
  return { state, offset, limit, total: countOf(counts, state as ListState), items: items.map(summary) };
}

/** The groups panel: the top groups by backlog, and the recorded bounds (running / limit). */
async function groups(queues: DashboardQueues, name: string, params: URLSearchParams): Promise<unknown> {
  const offset = Number(params.get('offset') ?? 0);
  const limit = Number(params.get('limit') ?? 10);
  if (!Number.isInteger(offset) || offset < 0) throw new HttpError(400, 'offset must be a whole number >= 0');
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE)
    throw new HttpError(400, `limit must be 1..${MAX_PAGE}`);
  const { queue } = await queues.get(name);
  const [list, bounds] = await Promise.all([queue.groups.list({ offset, limit }), queue.groups.bounds()]);
  return { offset, limit, groups: list, bounds };
}

/** The table row of a job: what a list shows, with the payload cut short. */
function summary(info: JobInfo<unknown>): Record<string, unknown> {
  // A completed job shows its kept result where others show their payload.
  const shown = info.state === 'completed' ? info.result : info.payload;
  const final = info.state === 'completed' || info.state === 'cancelled';
  let preview =
    info.decodeError ?? (final && !('result' in info) ? '' : (JSON.stringify(toPlain(shown)) ?? ''));
  if (preview.length > 120) preview = `${preview.slice(0, 117)}…`;
  return {
    id: info.id,
    state: info.state,
    runAt: info.runAt.getTime(),
    attempts: info.attempts,
    maxAttempts: info.maxAttempts,
    priority: info.priority,
    group: info.group ?? null,
    preview,
    lastError: info.lastError ? { name: info.lastError.name, message: info.lastError.message } : null,
    lease: info.lease
      ? {
          workerId: info.lease.workerId,
          startedAt: info.lease.startedAt.getTime(),
          deadline: info.lease.deadline.getTime(),
        }
      : null,
    diedAt: info.diedAt?.getTime() ?? null,
    completedAt: info.completedAt?.getTime() ?? null,
    cancelledAt: info.cancelledAt?.getTime() ?? null,
    hasResult: 'result' in info,
    progress: 'progress' in info ? info.progress : null,
  };
}
