/**
 * The cursor of queue.search: where the next page goes on (a source, a partition for the wheel,
 * and a position in the source's order), bound to the search it came from by a digest of its
 * filters. Opaque to callers (base64url text), and checked whole before it is used: a cursor that
 * is not one delayq gave, or one from another search, is a ValidationError naming `cursor`.
 */
import { createHash } from 'node:crypto';
import { ValidationError } from '../errors.js';
import type { SearchPosition } from '../operations/search.js';

/** Where a search goes on. */
export interface SearchCursorState {
  /** Index into the search's sources. */
  source: number;
  /** The partition walked (sources read one partition at a time: the wheel); 0 otherwise. */
  partition: number;
  position: SearchPosition;
}

const PREFIX = 'dq1.';
/** Longer than any cursor delayq writes (a member is at most ~1.8 KB: an id, a token, a group). */
const MAX_CURSOR_LENGTH = 8_192;

/** The digest binding a cursor to one search: the queue, its shape and the search's filters. */
export function searchDigest(parts: ReadonlyArray<string | number>): string {
  return createHash('sha1').update(JSON.stringify(parts)).digest('base64url').slice(0, 16);
}

/** The cursor text for `state` of the search whose digest is `digest`. */
export function encodeCursor(digest: string, state: SearchCursorState): string {
  const body = JSON.stringify({
    v: 1,
    h: digest,
    s: state.source,
    p: state.partition,
    k: state.position.score,
    m: state.position.member.toString('base64'),
  });
  return PREFIX + Buffer.from(body).toString('base64url');
}

function refuse(why: string): never {
  throw new ValidationError(
    `cursor ${why}: pass the cursor of the previous page of the same search unchanged, or leave it out to start from the first page`,
    'cursor',
  );
}

/**
 * The state in `cursor`, checked against the search (`digest`) and its shape (`sources` sources,
 * `partitions` partitions). Throws ValidationError naming `cursor` for anything else.
 */
export function decodeCursor(
  cursor: unknown,
  digest: string,
  shape: { sources: number; partitions: number },
): SearchCursorState {
  if (typeof cursor !== 'string') refuse(`must be a string from an earlier page, got ${typeof cursor}`);
  if (cursor.length > MAX_CURSOR_LENGTH || !cursor.startsWith(PREFIX)) refuse('is not one delayq gave');
  const text = cursor.slice(PREFIX.length);
  if (!/^[A-Za-z0-9_-]+$/.test(text)) refuse('is not one delayq gave');
  let body: unknown;
  try {
    body = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    refuse('is not one delayq gave');
  }
  if (typeof body !== 'object' || body === null) refuse('is not one delayq gave');
  const { v, h, s, p, k, m } = body as Record<string, unknown>;
  if (v !== 1) refuse('is from another version of delayq');
  if (h !== digest) {
    refuse(
      "belongs to another search (its state, group, idPrefix, from or to differ, or the queue's partitions)",
    );
  }
  const whole = (n: unknown, below: number): n is number =>
    typeof n === 'number' && Number.isInteger(n) && n >= 0 && n < below;
  if (!whole(s, shape.sources) || !whole(p, shape.partitions)) refuse('is not one delayq gave');
  if (typeof k !== 'string' || !/^\d{0,20}$/.test(k)) refuse('is not one delayq gave');
  if (typeof m !== 'string' || !/^[A-Za-z0-9+/]*={0,2}$/.test(m)) refuse('is not one delayq gave');
  const member = Buffer.from(m, 'base64');
  if (k === '' && member.length > 0) refuse('is not one delayq gave');
  return { source: s, partition: p, position: { score: k, member } };
}
