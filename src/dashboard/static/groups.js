// The queue page's groups panel.
import { $, el } from './dom.js';
import { fmtInt, fmtMs } from './format.js';
import { boot, getJson } from './http.js';
import { PAGE } from './view.js';

// The top groups by backlog, with running / limit and their pause buttons; hidden until the
// queue has a group.
/** Read the top groups and redraw the panel. */
export async function refreshGroups() {
  const page = await getJson(`/queues/${encodeURIComponent(boot.queue)}/groups?limit=${PAGE}`);
  const panel = $('#groups-panel');
  panel.hidden = page.groups.length === 0;
  const { concurrency, limit } = page.bounds;
  $('#groups-bound').textContent =
    `${concurrency} running per group` + (limit ? `, ${limit.max} starts per ${fmtMs(limit.perMs)}` : '');
  const head = $('#table-groups thead tr');
  if (!boot.canAct && head.children.length === 5) head.lastElementChild.remove();
  $('#table-groups tbody').replaceChildren(
    ...page.groups.map((g) => {
      const row = el(
        'tr',
        { class: g.paused ? 'paused-row' : '' },
        el(
          'td',
          { class: 'mono' },
          g.group,
          ...(g.paused ? [' ', el('span', { class: 'badge paused' }, 'paused')] : []),
        ),
        el('td', { class: 'n' }, fmtInt(g.waiting)),
        el('td', { class: 'n' }, fmtInt(g.due)),
        el('td', { class: `n${g.running >= concurrency ? ' full' : ''}` }, `${g.running} / ${concurrency}`),
      );
      if (boot.canAct) {
        row.append(
          el(
            'td',
            { class: 'row-actions' },
            el(
              'button',
              {
                type: 'button',
                class: `small ${g.paused ? 'primary' : 'ghost'}`,
                'data-action': g.paused ? 'group-resume' : 'group-pause',
                'data-id': g.group,
              },
              g.paused ? 'Resume' : 'Pause',
            ),
          ),
        );
      }
      return row;
    }),
  );
}
