/**
 * The dashboard's paths: where a request falls under the mount point (basePath), the page a sign-in
 * may return to, and a path segment decoded.
 */
import { HttpError } from './exchange.js';

/** The path below `base` ('/' for base itself), or null when `pathname` is outside it. */
export function pathUnder(base: string, pathname: string): string | null {
  if (!base) return pathname || '/';
  if (pathname !== base && !pathname.startsWith(`${base}/`)) return null;
  return pathname.slice(base.length) || '/';
}

/**
 * `next` when it is a path of this dashboard (under `base`), else the dashboard's start page: a
 * sign-in never sends the browser to another site or another application's path.
 */
export function dashboardPath(base: string, next: string | null): string {
  if (next === null || !next.startsWith('/') || next.startsWith('//') || /[\\\s]/.test(next))
    return `${base}/`;
  const path = next.split(/[?#]/)[0] ?? '';
  return pathUnder(base, path) === null ? `${base}/` : next;
}

/** A path segment (a queue name, a job id, a group) decoded; a 400 HttpError when malformed. */
export function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new HttpError(400, 'malformed path');
  }
}
