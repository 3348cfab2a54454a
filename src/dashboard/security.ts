/**
 * The dashboard's defences: security headers on every response, the token (checked in constant
 * time), the session cookie a token login sets, and the cross-site checks every cookie-borne POST
 * must pass.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { DashboardRequest } from './exchange.js';

type HeaderSource = Pick<DashboardRequest, 'header'>;

/** Headers on every dashboard response. The page loads only its own scripts and styles. */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
    "font-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  // The login URL carries the token: never leak it to another site.
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
  'permissions-policy': 'camera=(), microphone=(), geolocation=()',
};

/** Host names that mean "this machine only". */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase();
  return bare === 'localhost' || bare === '::1' || /^127\.\d+\.\d+\.\d+$/.test(bare);
}

/** The host part of a Host header ("127.0.0.1:4600" -> "127.0.0.1", "[::1]:80" -> "::1"). */
export function hostOf(header: string | undefined): string {
  if (!header) return '';
  if (header.startsWith('[')) return header.slice(1, header.indexOf(']'));
  return header.split(':')[0] ?? '';
}

/** Equal strings, compared in constant time for equal lengths. */
export function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** A dashboard option that cannot work as given: the message says what is wrong and what to do. */
export class DashboardConfigError extends Error {}

/**
 * Refuses a token too short to stand against guessing (the dashboard shows payloads and, with a
 * token, changes jobs). An empty token is refused too: it would otherwise turn sign-in off silently.
 */
export function checkToken(token: string | undefined): void {
  if (token !== undefined && token.length < 16) {
    throw new DashboardConfigError(
      `the dashboard token must be at least 16 characters, got ${token.length}: make one with \`openssl rand -hex 16\``,
    );
  }
}

/** Secrets derived from the token: the session cookie value and the CSRF token the page sends back. */
export class TokenAuth {
  readonly session: string;
  readonly csrf: string;
  constructor(private readonly token: string) {
    this.session = createHmac('sha256', token).update('delayq-dashboard-session').digest('base64url');
    this.csrf = createHmac('sha256', token).update('delayq-dashboard-csrf').digest('base64url');
  }

  /** True when `candidate` is the token. */
  matches(candidate: string | null | undefined): boolean {
    return typeof candidate === 'string' && safeEqual(candidate, this.token);
  }

  /** How the request proves it knows the token: a Bearer header (scripts), the session cookie (browsers), or not at all. */
  authOf(req: HeaderSource): 'bearer' | 'cookie' | null {
    const header = req.header('authorization');
    if (header?.startsWith('Bearer ') && this.matches(header.slice(7).trim())) return 'bearer';
    const cookie = readCookie(req, COOKIE_NAME);
    if (cookie !== null && safeEqual(cookie, this.session)) return 'cookie';
    return null;
  }

  /** The Set-Cookie value that signs a browser in. */
  cookie(path: string, secure: boolean): string {
    return `${COOKIE_NAME}=${this.session}; Path=${path || '/'}; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`;
  }
}

const COOKIE_NAME = 'delayq_session';

function readCookie(req: HeaderSource, name: string): string | null {
  for (const part of (req.header('cookie') ?? '').split(';')) {
    const [k, ...v] = part.trim().split('=');
    if (k === name) return v.join('=');
  }
  return null;
}

/**
 * Why a browser POST must be refused as possibly cross-site, or null when it passes: it must carry
 * the page's CSRF token in a header (which a cross-site form cannot set), come from this origin when
 * the browser says where it comes from, and be JSON.
 */
export function crossSiteProblem(req: HeaderSource, csrf: string): string | null {
  const site = req.header('sec-fetch-site');
  if (site !== undefined && site !== 'same-origin' && site !== 'none') return `cross-site request (${site})`;
  const origin = req.header('origin');
  if (origin !== undefined && origin !== 'null') {
    let originHost = '';
    try {
      originHost = new URL(origin).host;
    } catch {
      return 'malformed Origin header';
    }
    if (originHost !== req.header('host')) return `request from another origin (${origin})`;
  } else if (origin === 'null') {
    return 'request from an opaque origin';
  }
  const type = req.header('content-type') ?? '';
  if (!type.startsWith('application/json')) return 'actions take application/json';
  const header = req.header('x-csrf-token');
  if (typeof header !== 'string' || !safeEqual(header, csrf)) return 'missing or wrong X-CSRF-Token';
  return null;
}
