/**
 * The dashboard's search (GET /api/queues/<queue>/search): queue.search's filters read from the
 * query (`id` prefix, `state`, `group`, `from`, `to` as epoch ms or ISO dates, `limit`, `cursor`),
 * answered as a page of table rows and the cursor of the next one. A bad filter is a 400 whose
 * message is the ValidationError's, which names it.
 */
import { ValidationError } from '../errors.js';
import type { JobInfo, Queue, SearchOptions } from '../queue.js';
import { HttpError } from './exchange.js';

/** Most rows a page of the dashboard's search holds. */
const MAX_ROWS = 100;
const DEFAULT_ROWS = 20;

/** A time from the query: epoch ms, or an ISO date (a datetime-local value is read as local time). */
function timeParam(params: URLSearchParams, name: 'from' | 'to'): number | undefined {
  const value = params.get(name)?.trim();
  if (!value) return undefined;
  const ms = /^\d+$/.test(value) ? Number(value) : Date.parse(value);
  if (Number.isNaN(ms)) throw new HttpError(400, `${name} must be epoch ms or an ISO date, got '${value}'`);
  return ms;
}

/** The search the query asks for; empty fields are left out. */
export function searchOptionsOf(params: URLSearchParams): SearchOptions {
  const options: SearchOptions = {};
  const text = (name: string): string | undefined => {
    const value = params.get(name);
    return value === null || value === '' ? undefined : value;
  };
  const state = text('state');
  if (state !== undefined) options.state = state as NonNullable<SearchOptions['state']>;
  const group = text('group');
  if (group !== undefined) options.group = group;
  const id = text('id');
  if (id !== undefined) options.idPrefix = id;
  const from = timeParam(params, 'from');
  if (from !== undefined) options.from = from;
  const to = timeParam(params, 'to');
  if (to !== undefined) options.to = to;
  const limit = Number(text('limit') ?? DEFAULT_ROWS);
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_ROWS) {
    throw new HttpError(400, `limit must be 1..${MAX_ROWS}`);
  }
  options.limit = limit;
  const cursor = text('cursor');
  if (cursor !== undefined) options.cursor = cursor;
  return options;
}

/** One page of `queue`'s search as the query asks, each job as `row` shows it. */
export async function searchPage(
  queue: Queue,
  params: URLSearchParams,
  row: (info: JobInfo<unknown>) => Record<string, unknown>,
): Promise<{ jobs: Array<Record<string, unknown>>; cursor: string | null }> {
  const options = searchOptionsOf(params);
  try {
    const page = await queue.search(options);
    return { jobs: page.jobs.map(row), cursor: page.cursor };
  } catch (err) {
    if (err instanceof ValidationError) throw new HttpError(400, err.message);
    throw err;
  }
}
