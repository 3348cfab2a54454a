// The page's settings (the #boot block the server wrote) and its calls to the dashboard's JSON API:
// reads, and actions as same-origin JSON POSTs carrying the CSRF token.
/* global document, fetch */

/** { base, queue, canAct, readOnly, csrf }: see src/dashboard/page.ts. */
export const boot = JSON.parse(document.getElementById('boot').textContent);

const api = (path) => `${boot.base}/api${path}`;

/** GET an API path; rejects with the server's error message. */
export async function getJson(path) {
  const res = await fetch(api(path), {
    headers: { accept: 'application/json' },
    credentials: 'same-origin',
  });
  const body = await res.json().catch(() => ({ error: res.statusText }));
  if (!res.ok) throw new Error(body.error || res.statusText);
  return body;
}

/** POST an action; rejects with the server's error message. */
export async function post(path) {
  const res = await fetch(api(path), {
    method: 'POST',
    credentials: 'same-origin',
    headers: { 'content-type': 'application/json', 'x-csrf-token': boot.csrf },
    body: '{}',
  });
  const body = await res.json().catch(() => ({ error: res.statusText }));
  if (!res.ok) throw new Error(body.error || res.statusText);
  return body;
}
