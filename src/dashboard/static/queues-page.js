// The start page: every queue with its counts, each linking to its own page.
import { $, el, setStatus } from './dom.js';
import { fmtInt } from './format.js';
import { boot, getJson } from './http.js';

/** Read the queues and redraw their table. */
export async function refreshQueues() {
  try {
    const { queues } = await getJson('/queues');
    const body = $('#queues tbody');
    body.replaceChildren(
      ...(queues.length === 0
        ? [
            el(
              'tr',
              {},
              el(
                'td',
                { colspan: '6', class: 'muted' },
                'No queues with jobs yet. Run `npm start` to see the demo.',
              ),
            ),
          ]
        : queues.map((q) =>
            el(
              'tr',
              {},
              el(
                'td',
                {},
                el('a', { href: `${boot.base}/queues/${encodeURIComponent(q.name)}` }, q.name),
                ...(q.paused ? [' ', el('span', { class: 'badge paused' }, 'paused')] : []),
              ),
              el('td', { class: 'n' }, fmtInt(q.counts.scheduled)),
              el('td', { class: 'n' }, fmtInt(q.counts.due)),
              el('td', { class: 'n' }, fmtInt(q.counts.waitingChildren)),
              el('td', { class: 'n' }, fmtInt(q.counts.active)),
              el('td', { class: `n ${q.counts.dead ? 'bad' : ''}` }, fmtInt(q.counts.dead)),
            ),
          )),
    );
    setStatus(true, `updated ${new Date().toLocaleTimeString('en-GB', { hour12: false })}`);
  } catch (err) {
    setStatus(false, `offline: ${err.message}`);
  }
}
