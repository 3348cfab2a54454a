/**
 * The dashboard's replies by kind (HTML page, JSON, redirect, not found), each with the headers it
 * always carries: nothing the dashboard answers is cached, except its static assets (assets.ts).
 */
import type { Reply } from './exchange.js';

/** An HTML page. */
export function html(status: number, body: string): Reply {
  return {
    status,
    headers: { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' },
    body,
  };
}

/** A JSON body. */
export function json(status: number, body: unknown): Reply {
  return {
    status,
    headers: { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' },
    body: JSON.stringify(body),
  };
}

/** After a sign-in: set the session cookie and go to `location`. */
export function signedIn(cookie: string, location: string): Reply {
  return { status: 303, headers: { 'set-cookie': cookie, location } };
}

/** A path outside the dashboard, for a node:http handler given no `next`. */
export const NOT_FOUND: Reply = {
  status: 404,
  headers: { 'content-type': 'text/plain; charset=utf-8' },
  body: 'not found\n',
};
