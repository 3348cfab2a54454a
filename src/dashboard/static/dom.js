// Building and finding nodes, and the two messages the page shows: the toast after an action, and
// the status line (the Redis clock, or why the page is offline).
/* global document, setTimeout, clearTimeout, Node */

/** The first node matching `sel`. */
export const $ = (sel, root = document) => root.querySelector(sel);

/** An element with attributes and children; text children are text nodes, never HTML. */
export const el = (tag, attrs = {}, ...children) => {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') node.className = v;
    else if (k.startsWith('data-')) node.setAttribute(k, v);
    else if (k === 'title') node.title = v;
    else node.setAttribute(k, v);
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
};

let toastTimer;
/** Show `text` for a few seconds; kind 'bad' for an error. */
export function toast(text, kind = 'ok') {
  const node = $('#toast');
  node.textContent = text;
  node.className = `toast show ${kind}`;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => (node.className = 'toast'), 3500);
}

/** The status line: `ok` false marks the page offline. */
export function setStatus(ok, text) {
  const node = $('#clock');
  if (node) {
    node.textContent = text;
    node.classList.toggle('offline', !ok);
  }
}
