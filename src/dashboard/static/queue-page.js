// One queue's page: its counts, charts, tables and groups, refreshed together, and the clicks on
// it (actions, paging, the inspector).
/* global document, confirm */
import { drawCharts, makeCharts } from './charts.js';
import { $, setStatus, toast } from './dom.js';
import { fmtInt, fmtRel, fmtTime } from './format.js';
import { refreshGroups } from './groups.js';
import { boot, getJson, post } from './http.js';
import { inspect } from './inspector.js';
import { refreshTable } from './job-tables.js';
import { wireSearch } from './search.js';
import { PAGE, STATES, view } from './view.js';

/** Read the queue's overview and redraw everything on its page. */
export async function refreshQueue() {
  try {
    const o = await getJson(`/queues/${encodeURIComponent(boot.queue)}`);
    view.skew = o.now - Date.now();
    $('#c-scheduled').textContent = fmtInt(o.counts.scheduled);
    $('#c-due').textContent = fmtInt(o.counts.due);
    $('#c-waiting-children').textContent = fmtInt(o.counts.waitingChildren);
    $('#c-active').textContent = fmtInt(o.counts.active);
    $('#c-dead').textContent = fmtInt(o.counts.dead);
    $('#c-completed').textContent = fmtInt(o.counts.completed);
    $('#c-cancelled').textContent = fmtInt(o.counts.cancelled);
    $('#c-next').textContent = o.nextDue === null ? 'nothing waiting' : `next ${fmtRel(o.nextDue)}`;
    // Held: due grouped jobs their group keeps from starting now (its bound, rate or pause).
    const held = o.counts.held ? `, ${fmtInt(o.counts.held)} held by their group` : '';
    $('#c-overdue').textContent = o.counts.due
      ? `oldest ${fmtRel(o.nextDue)}${held}`
      : 'none waiting past due';
    showPaused(o.paused);
    drawCharts(o);
    await Promise.all([...STATES.map(refreshTable), refreshGroups()]);
    setStatus(true, `Redis clock ${fmtTime(o.now)}`);
  } catch (err) {
    setStatus(false, `offline: ${err.message}`);
  }
}

// The paused badge, and the one button that pauses or resumes (its label says what a click does).
function showPaused(paused) {
  $('#paused-badge').hidden = !paused;
  const toggle = $('#pause-toggle');
  if (!toggle) return;
  toggle.hidden = false;
  toggle.disabled = false;
  toggle.dataset.paused = paused ? 'yes' : '';
  toggle.textContent = paused ? 'Resume' : 'Pause';
  toggle.className = paused ? 'primary' : '';
}

// Send one action, say how it went, and redraw the page and the inspector.
async function act(action, id) {
  const q = encodeURIComponent(boot.queue);
  try {
    if (action === 'pause' || action === 'resume') {
      await post(`/queues/${q}/${action}`);
      toast(action === 'pause' ? 'paused: workers start no job until resumed' : 'resumed');
    } else if (action === 'group-pause' || action === 'group-resume') {
      const verb = action === 'group-pause' ? 'pause' : 'resume';
      await post(`/queues/${q}/groups/${encodeURIComponent(id)}/${verb}`);
      toast(verb === 'pause' ? `group ${id} paused: workers start none of its jobs` : `group ${id} resumed`);
    } else if (action === 'retry-all') {
      const r = await post(`/queues/${q}/dead/retry-all`);
      toast(`${r.moved} dead job${r.moved === 1 ? '' : 's'} back in the schedule`);
    } else {
      await post(`/queues/${q}/jobs/${encodeURIComponent(id)}/${action}`);
      toast(`${action === 'retry' ? 'retried' : action === 'cancel' ? 'cancelled' : 'removed'} ${id}`);
    }
  } catch (err) {
    toast(err.message, 'bad');
  }
  await refreshQueue();
  if (view.inspected) await inspect(view.inspected);
}

/** Draw the charts' frames and handle every click on the page (one listener). */
export function wireQueuePage() {
  makeCharts();
  wireSearch();
  document.addEventListener('click', (event) => {
    const target = event.target.closest('button, tr[data-id]');
    if (!target) return;
    if (target.matches('button[data-action]')) {
      event.stopPropagation();
      target.disabled = true;
      void act(target.dataset.action, target.dataset.id);
    } else if (target.matches('button[data-page]')) {
      const state = target.dataset.for;
      view.offsets[state] = Math.max(
        0,
        view.offsets[state] + (target.dataset.page === 'next' ? PAGE : -PAGE),
      );
      void refreshTable(state);
    } else if (target.id === 'pause-toggle') {
      target.disabled = true;
      void act(target.dataset.paused ? 'resume' : 'pause');
    } else if (target.id === 'retry-all') {
      if (confirm(`Retry all ${fmtInt(view.totals.dead)} dead jobs of ${boot.queue}?`)) void act('retry-all');
    } else if (target.matches('tr[data-id]')) {
      void inspect(target.dataset.id);
    }
  });
}
