// The job inspector: every fact of one job, its payload or result, its last error and its actions.
/* global document, CSS */
import { actionButtons } from './job-actions.js';
import { $, el } from './dom.js';
import { fmtTime } from './format.js';
import { boot, getJson } from './http.js';
import { view } from './view.js';

/** A link that shows job `id` in the inspector: a flow's parent and children are one click apart. */
function jobLink(id) {
  const link = el('a', { href: '#', class: 'mono job-link' }, id);
  link.addEventListener('click', (event) => {
    event.preventDefault();
    void inspect(id);
  });
  return link;
}

/** Show job `id` in the inspector and mark its rows. */
export async function inspect(id) {
  view.inspected = id;
  document.querySelectorAll('tr.selected').forEach((r) => r.classList.remove('selected'));
  document.querySelectorAll(`tr[data-id="${CSS.escape(id)}"]`).forEach((r) => r.classList.add('selected'));
  const panel = $('#inspector');
  try {
    const job = await getJson(`/queues/${encodeURIComponent(boot.queue)}/jobs/${encodeURIComponent(id)}`);
    // A completed or cancelled job keeps only a final record: no due time, attempts or payload.
    const final = job.state === 'completed' || job.state === 'cancelled';
    const rows = [
      ['id', job.id],
      ['state', job.state],
      ['due', final ? null : job.runAt],
      ['attempts', final ? null : `${job.attempts} of ${job.maxAttempts}`],
      ['group', job.group],
      // A grouped job has no priority: its group is what matters (the row above).
      ['priority', final || job.group !== undefined ? null : job.priority],
      ['created', job.createdAt],
      ['version', job.version],
      ['lease', job.lease ? `${job.lease.workerId} until ${job.lease.deadline}` : null],
      ['died', job.diedAt],
      ['completed', job.completedAt],
      ['cancelled', job.cancelledAt],
      ['progress', job.progress === undefined ? null : JSON.stringify(job.progress)],
      // A flow's child (queue.addFlow): its parent, while the flow's parent has not ended.
      ['parent', job.parent],
    ].filter(([, v]) => v !== null && v !== undefined);
    // replaceChildren would show a null as the text "null": only the parts this job has.
    const parts = [
      el('h2', {}, 'Job inspector'),
      el(
        'dl',
        { class: 'facts' },
        ...rows.flatMap(([k, v]) => [
          el('dt', {}, k),
          k === 'parent'
            ? el('dd', {}, jobLink(String(v)))
            : el('dd', { class: k === 'state' ? `state ${v}` : '' }, String(v)),
        ]),
      ),
      el('div', { class: 'row-actions' }, ...actionButtons(job.state, job.id)),
      // A flow's parent: its children and their states, each one click from its own inspector.
      job.children?.length ? el('h3', {}, `children (${job.children.length})`) : null,
      job.children?.length
        ? el(
            'ul',
            { class: 'children' },
            ...job.children.map((child) =>
              el(
                'li',
                {},
                jobLink(child.id),
                ' ',
                el('span', { class: `state ${child.state}` }, child.state),
              ),
            ),
          )
        : null,
      final ? null : el('h3', {}, 'payload'),
      final
        ? null
        : el(
            'pre',
            {},
            job.decodeError ? `cannot decode: ${job.decodeError}` : JSON.stringify(job.payload, null, 2),
          ),
      // The handler's return value, kept when its worker keeps completed jobs (keepCompleted).
      'result' in job ? el('h3', {}, 'result') : null,
      'result' in job ? el('pre', {}, JSON.stringify(job.result, null, 2)) : null,
      job.lastError ? el('h3', {}, 'last error') : null,
      job.lastError
        ? el(
            'pre',
            { class: 'bad' },
            job.lastError.stack || `${job.lastError.name}: ${job.lastError.message}`,
          )
        : null,
      // job.log() lines, oldest first, each with the attempt that wrote it and when.
      job.logs?.length
        ? el('h3', {}, `log (${job.logs.length} line${job.logs.length === 1 ? '' : 's'})`)
        : null,
      job.logs?.length
        ? el(
            'ol',
            { class: 'log' },
            ...job.logs.map((l) =>
              el(
                'li',
                {},
                el('span', { class: 'mono dim', title: l.at }, `#${l.attempt} ${fmtTime(Date.parse(l.at))}`),
                ' ',
                l.line,
              ),
            ),
          )
        : null,
    ];
    panel.replaceChildren(...parts.filter((part) => part !== null));
  } catch (err) {
    panel.replaceChildren(
      el('h2', {}, 'Job inspector'),
      el('p', { class: 'muted' }, `${id}: ${err.message}`),
    );
  }
}
