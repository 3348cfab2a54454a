// The queue page's job tables, one per state, a page at a time; rows of waiting (scheduled, or
// flow parents waiting for their children) and dead jobs carry their action buttons, and the row
// of the job in the inspector is marked.
import { actionButtons } from './job-actions.js';
import { $, el } from './dom.js';
import { fmtInt, fmtRel } from './format.js';
import { boot, getJson } from './http.js';
import { PAGE, view } from './view.js';

// A waiting job's cells: id, due, group or priority, attempts, payload.
function waitingCells(j) {
  return [
    el('td', { class: 'mono' }, j.id),
    el('td', { title: new Date(j.runAt).toISOString() }, fmtRel(j.runAt)),
    // The group when there is one (a grouped job has no priority); else the priority, blank for
    // the default 0, so the set ones stand out.
    j.group !== null
      ? el('td', { class: 'mono' }, j.group)
      : el('td', { class: 'n' }, j.priority ? `prio ${j.priority}` : ''),
    el('td', { class: 'n' }, `${j.attempts}/${j.maxAttempts}`),
    el('td', { class: 'mono dim' }, j.preview),
  ];
}

const cells = {
  scheduled: waitingCells,
  // A flow's parent: its own due time (it runs then, or when its last child completed if later).
  'waiting-children': waitingCells,
  active: (j) => [
    el('td', { class: 'mono' }, j.id),
    el('td', { class: 'mono' }, j.group ?? ''),
    el('td', { class: 'mono dim' }, j.lease ? j.lease.workerId : '?'),
    el('td', {}, j.lease ? fmtRel(j.lease.deadline) : '?'),
    el('td', { class: 'n' }, `${j.attempts}/${j.maxAttempts}`),
  ],
  dead: (j) => [
    el('td', { class: 'mono' }, j.id),
    el('td', { title: j.diedAt ? new Date(j.diedAt).toISOString() : '' }, j.diedAt ? fmtRel(j.diedAt) : ''),
    el('td', { class: 'n' }, `${j.attempts}/${j.maxAttempts}`),
    el('td', { class: 'bad' }, j.lastError ? `${j.lastError.name}: ${j.lastError.message}` : ''),
  ],
  completed: (j) => [
    el('td', { class: 'mono' }, j.id),
    el(
      'td',
      { title: j.completedAt ? new Date(j.completedAt).toISOString() : '' },
      j.completedAt ? fmtRel(j.completedAt) : '',
    ),
    el('td', { class: 'mono dim' }, j.hasResult ? j.preview : ''),
  ],
  cancelled: (j) => [
    el('td', { class: 'mono' }, j.id),
    el(
      'td',
      { title: j.cancelledAt ? new Date(j.cancelledAt).toISOString() : '' },
      j.cancelledAt ? fmtRel(j.cancelledAt) : '',
    ),
  ],
};
// Columns per table (without the actions column).
const columns = { scheduled: 5, 'waiting-children': 5, active: 5, dead: 4, completed: 3, cancelled: 2 };

/** Read the current page of the `state` table and redraw it with its pager. */
export async function refreshTable(state) {
  const page = await getJson(
    `/queues/${encodeURIComponent(boot.queue)}/jobs?state=${state}&offset=${view.offsets[state]}&limit=${PAGE}`,
  );
  view.totals[state] = page.total;
  if (page.items.length === 0 && view.offsets[state] > 0 && page.total > 0) {
    view.offsets[state] = Math.max(0, Math.floor((page.total - 1) / PAGE) * PAGE);
    return refreshTable(state);
  }
  const body = $(`#table-${state} tbody`);
  // Rows of waiting and dead jobs carry their actions; a running job's are in the inspector.
  const canAct = boot.canAct && (state === 'scheduled' || state === 'waiting-children' || state === 'dead');
  const head = $(`#table-${state} thead tr`);
  if (canAct && head.children.length === columns[state]) head.append(el('th', {}, ''));
  body.replaceChildren(
    ...(page.items.length === 0
      ? [
          el(
            'tr',
            { class: 'empty' },
            el(
              'td',
              { colspan: String(columns[state] + (canAct ? 1 : 0)), class: 'muted' },
              `no ${state} jobs`,
            ),
          ),
        ]
      : page.items.map((j) => {
          const row = el(
            'tr',
            { 'data-id': j.id, 'data-state': state, class: view.inspected === j.id ? 'selected' : '' },
            ...cells[state](j),
          );
          if (canAct) row.append(el('td', { class: 'row-actions' }, ...actionButtons(state, j.id)));
          return row;
        })),
  );
  $(`[data-count="${state}"]`).textContent = fmtInt(page.total);
  const from = page.total === 0 ? 0 : view.offsets[state] + 1;
  const to = Math.min(view.offsets[state] + PAGE, page.total);
  $(`[data-pageinfo="${state}"]`).textContent = `${fmtInt(from)}–${fmtInt(to)} of ${fmtInt(page.total)}`;
  $(`[data-page="prev"][data-for="${state}"]`).disabled = view.offsets[state] === 0;
  $(`[data-page="next"][data-for="${state}"]`).disabled = view.offsets[state] + PAGE >= page.total;
}
