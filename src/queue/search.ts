/**
 * queue.search (issue 33): find jobs by state, group, id prefix and time range, a page at a time,
 * without an index of its own. The sorted sets every state already has are walked (search.lua):
 * the time range is a score range of each (found in O(log N)), the id prefix and the group are
 * tested on each entry walked, and each call walks a bounded number of entries (SEARCH_SCAN_PER_CALL),
 * so a search never holds Redis for long, however large the queue: a page may come back with fewer
 * jobs than `limit`, and its cursor goes on. With partitions, each source is walked in every
 * partition from the same position and the pages merged by the source's order.
 */
import type { QueueContext } from '../definition/context.js';
import { ValidationError } from '../errors.js';
import { validateGroup } from '../job-options.js';
import { JOB_INFO_STATES, type JobInfoState, type RawJob } from '../operations/raw-job.js';
import {
  SEARCH_START,
  searchStep,
  type SearchHit,
  type SearchPosition,
  type SearchSource,
} from '../operations/search.js';
import type { Layout } from '../operations/wheel.js';
import { assertKnownOptions } from '../option-names.js';
import { decodeCursor, encodeCursor, searchDigest, type SearchCursorState } from './search-cursor.js';

/** What queue.search looks for; every filter given must hold. */
export interface SearchOptions {
  /**
   * Only jobs in this state. Left out: every state (waiting-children, scheduled, active, dead,
   * completed, cancelled).
   */
  state?: JobInfoState;
  /** Only this group's jobs: those waiting and running (finished jobs are not kept by group). */
  group?: string;
  /** Only jobs whose id starts with this text. */
  idPrefix?: string;
  /**
   * Only jobs whose time is at or after this (a Date or epoch ms): the due time of a scheduled
   * job (a flow parent waiting for its children: its own due time), the start of a running one,
   * when a finished one ended.
   */
  from?: Date | number;
  /** Only jobs whose time (as `from`) is at or before this. */
  to?: Date | number;
  /** Most jobs a page holds: 1 to 1000, default 50. */
  limit?: number;
  /** The `cursor` of the previous page of the same search; left out (or null): the first page. */
  cursor?: string | null;
}

/** A page of a search. */
export interface SearchPage<J> {
  /** Up to `limit` jobs; fewer (even none) when the call's scan budget ran out first. */
  jobs: J[];
  /** Pass it back for the next page; null when the search has looked at everything. */
  cursor: string | null;
}

/** The most jobs a page holds. */
export const SEARCH_MAX_LIMIT = 1000;
const DEFAULT_LIMIT = 50;
/**
 * Entries of a source one script call looks at, at most: a ZRANGE of members costs Redis 0.5 to
 * 1 µs an entry, so a call holds it for 1 to 2 ms (bench/search.ts, on a loaded 2-core host).
 */
export const SEARCH_SCAN_PER_STEP = 2_000;
/** Entries one search() call looks at, at most, over its script calls and partitions. */
export const SEARCH_SCAN_PER_CALL = 100_000;
/** Latest time a search range can name: 2^48 - 2 ms, past the year 10889 (search.lua). */
const MAX_TIME = 281_474_976_710_654;

const SEARCH_KEYS: ReadonlySet<string> = new Set([
  'state',
  'group',
  'idPrefix',
  'from',
  'to',
  'limit',
  'cursor',
] satisfies Array<keyof SearchOptions>);
/** Every state, in the order a job goes through them (a flow's parent waits for its children first). */
const STATES = JOB_INFO_STATES;
/** Sources walked newest first. */
const NEWEST_FIRST: ReadonlySet<SearchSource> = new Set(['c', 'x', 'd']);

/** A search's filters, checked. */
export interface CheckedSearch {
  state: JobInfoState | null;
  group: string;
  idPrefix: string;
  from: number;
  to: number;
  limit: number;
  cursor: string | null;
}

function timeOf(value: unknown, name: 'from' | 'to'): number {
  const ms = value instanceof Date ? value.getTime() : value;
  if (typeof ms !== 'number' || !Number.isInteger(ms) || ms < 0 || ms > MAX_TIME) {
    throw new ValidationError(
      `search ${name} must be a valid Date or whole epoch milliseconds from 0 to ${MAX_TIME}, got ${
        value instanceof Date ? 'an invalid Date' : (JSON.stringify(value) ?? String(value))
      }`,
      name,
    );
  }
  return ms;
}

/** Check every option of a search; throws ValidationError naming the first wrong one. */
export function checkSearch(options: unknown): CheckedSearch {
  if (options === undefined) options = {};
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new ValidationError(
      'search takes an options object { state, group, idPrefix, from, to, limit, cursor }',
    );
  }
  assertKnownOptions(options, SEARCH_KEYS, 'search option');
  const o = options as SearchOptions;
  if (o.state !== undefined && !STATES.includes(o.state)) {
    throw new ValidationError(
      `search state must be one of ${STATES.join(', ')}, got ${JSON.stringify(o.state) ?? String(o.state)}`,
      'state',
    );
  }
  const group = o.group === undefined ? '' : validateGroup(o.group);
  if (group !== '' && o.state !== undefined && o.state !== 'scheduled' && o.state !== 'active') {
    const why =
      o.state === 'waiting-children'
        ? 'flow parents waiting for their children are not kept by group'
        : 'finished jobs are not kept by group';
    throw new ValidationError(
      `search by group takes state 'scheduled' or 'active' (or none: both), got '${o.state}': ${why}`,
      'group',
    );
  }
  let idPrefix = '';
  if (o.idPrefix !== undefined) {
    if (typeof o.idPrefix !== 'string' || o.idPrefix.length === 0 || o.idPrefix.length > 512) {
      throw new ValidationError(
        `idPrefix must be a non-empty string of at most 512 characters (leave it out to match every id), got ${
          JSON.stringify(o.idPrefix) ?? String(o.idPrefix)
        }`,
        'idPrefix',
      );
    }
    if (/\p{Cc}/u.test(o.idPrefix) || /\p{Cs}/u.test(o.idPrefix)) {
      throw new ValidationError(
        `idPrefix ${JSON.stringify(o.idPrefix)} holds a control character or a lone surrogate, which no id has`,
        'idPrefix',
      );
    }
    idPrefix = o.idPrefix;
  }
  const from = o.from === undefined ? 0 : timeOf(o.from, 'from');
  const to = o.to === undefined ? MAX_TIME : timeOf(o.to, 'to');
  if (from > to) {
    throw new ValidationError(
      `search from (${new Date(from).toISOString()}) is after to (${new Date(to).toISOString()}): swap them`,
      'from',
    );
  }
  const limit = o.limit ?? DEFAULT_LIMIT;
  if (!Number.isInteger(limit) || limit < 1 || limit > SEARCH_MAX_LIMIT) {
    throw new ValidationError(
      `search limit must be a whole number from 1 to ${SEARCH_MAX_LIMIT}, got ${String(limit)}`,
      'limit',
    );
  }
  if (o.cursor !== undefined && o.cursor !== null && typeof o.cursor !== 'string') {
    throw new ValidationError(
      `cursor must be a string from an earlier page, or null, got ${typeof o.cursor}`,
      'cursor',
    );
  }
  return { state: o.state ?? null, group, idPrefix, from, to, limit, cursor: o.cursor ?? null };
}

/**
 * The sources a search walks, in order: the flow parents waiting for their children, the waiting
 * classes (not-yet-due prioritized before due ones), then running, dead, completed and cancelled,
 * as a job moves through them, so a job that moves on meanwhile (a parent released, a job
 * promoted) is seen twice rather than missed.
 */
function sourcesOf(search: CheckedSearch, layout: Layout): SearchSource[] {
  const waiting: SearchSource[] =
    search.group !== '' ? ['g'] : layout.kind === 'wheel' ? ['s', 'w'] : ['p', 'r', 's', 'g'];
  const of: Record<JobInfoState, SearchSource[]> = {
    'waiting-children': ['f'],
    scheduled: waiting,
    active: ['a'],
    dead: ['d'],
    completed: ['c'],
    cancelled: ['x'],
  };
  if (search.state !== null) return of[search.state];
  const states: JobInfoState[] = search.group !== '' ? ['scheduled', 'active'] : [...STATES];
  return states.flatMap((state) => of[state]);
}

/** `a` before `b` in a source's walk order (negative), the same (0) or after; START first. */
function compareInWalk(source: SearchSource, a: SearchPosition, b: SearchPosition): number {
  if (a.score === '' || b.score === '') return (a.score === '' ? 0 : 1) - (b.score === '' ? 0 : 1);
  const byScore = Number(a.score) - Number(b.score);
  const asc = byScore !== 0 ? Math.sign(byScore) : Buffer.compare(a.member, b.member);
  return NEWEST_FIRST.has(source) ? -asc : asc;
}

/**
 * One page of `search` over every partition of `ctx`, from its cursor: the raw jobs, and the
 * cursor of the next page (null at the end).
 */
export async function searchAll(
  ctx: QueueContext,
  layout: Layout,
  search: CheckedSearch,
  scan: { perStep: number; perCall: number } = {
    perStep: SEARCH_SCAN_PER_STEP,
    perCall: SEARCH_SCAN_PER_CALL,
  },
): Promise<SearchPage<RawJob>> {
  const sources = sourcesOf(search, layout);
  const partitions = ctx.partitions;
  const digest = searchDigest([
    ctx.definition.name,
    partitions.length,
    layout.kind,
    search.state ?? '',
    search.group,
    search.idPrefix,
    search.from,
    search.to,
  ]);
  let at: SearchCursorState =
    search.cursor === null
      ? { source: 0, partition: 0, position: SEARCH_START }
      : decodeCursor(search.cursor, digest, { sources: sources.length, partitions: partitions.length });
  const found: RawJob[] = [];
  const seen = new Set<string>();
  const keep = (hits: readonly SearchHit[]): void => {
    for (const { raw } of hits) {
      // A job that moved from one source to the next during the call (promoted, started) is
      // shown once per page.
      if (seen.has(raw.id)) continue;
      seen.add(raw.id);
      found.push(raw);
    }
  };
  let examined = 0;
  // Each step looks at one entry or more while its source is not done; the bound on rounds only
  // guards against a source that would not move.
  for (let round = 0; round < 1_000; round++) {
    if (at.source >= sources.length || found.length >= search.limit || examined >= scan.perCall) break;
    const source = sources[at.source]!;
    const step = {
      source,
      from: search.from,
      to: search.to,
      idPrefix: search.idPrefix,
      group: search.group,
      position: at.position,
      limit: search.limit - found.length,
    };
    const next = (): SearchCursorState => ({ source: at.source + 1, partition: 0, position: SEARCH_START });
    if (source === 'w') {
      // Hash order: one partition after the other, nothing to merge.
      const out = await searchStep(ctx.client, partitions[at.partition]!, {
        ...step,
        budget: scan.perStep,
      });
      examined += out.examined;
      keep(out.hits);
      if (!out.done) at = { ...at, position: out.reach };
      else if (at.partition + 1 < partitions.length) {
        at = { source: at.source, partition: at.partition + 1, position: SEARCH_START };
      } else at = next();
      continue;
    }
    const budget = Math.max(Math.min(500, scan.perStep), Math.floor(scan.perStep / partitions.length));
    const outs = await Promise.all(
      partitions.map((keys) => searchStep(ctx.client, keys, { ...step, budget })),
    );
    // Every partition has looked at all its entries up to its reach: the merged order is known up
    // to the earliest reach of those not done.
    let bound: SearchPosition | null = null;
    for (const out of outs) {
      examined += out.examined;
      if (!out.done && (bound === null || compareInWalk(source, out.reach, bound) < 0)) bound = out.reach;
    }
    const candidates = outs
      .flatMap((out) => out.hits)
      .filter((hit) => bound === null || compareInWalk(source, hit.key, bound) <= 0)
      .sort((a, b) => compareInWalk(source, a.key, b.key));
    const taken = candidates.slice(0, step.limit);
    keep(taken);
    const last = taken.at(-1);
    if (last && taken.length === step.limit && (bound !== null || candidates.length > taken.length)) {
      at = { ...at, position: last.key };
    } else if (bound === null) {
      at = next();
    } else {
      at = { ...at, position: bound };
    }
  }
  return {
    jobs: found,
    cursor: at.source >= sources.length ? null : encodeCursor(digest, at),
  };
}
