// The search box of a queue's page: queue.search's filters (id prefix, state, group, time range),
// its pages through the cursor (kept, so "‹ prev" goes back), and rows that open the job inspector
// (the page's click handler does that for any row with a data-id). Not refreshed with the page: a
// search shows what it found when it ran, until the next search or page.
/* global document, URLSearchParams */
import { $, el } from './dom.js';
import { fmtRel } from './format.js';
import { boot, getJson } from './http.js';
import { view } from './view.js';

const ROWS = 10;

const search = {
  /** The filters of the search shown, as query parameters; null before the first search. */
  params: null,
  /** The cursor of each page seen so far (the first page's is null). */
  cursors: [null],
  page: 0,
  /** The cursor of the page after the one shown, or null at the end. */
  next: null,
};

/** A datetime-local value as epoch ms ('' when empty), read in this browser's time zone. */
function timeOf(input) {
  if (!input.value) return '';
  const ms = new Date(input.value).getTime();
  return Number.isNaN(ms) ? input.value : String(ms);
}

function paramsOf(form) {
  const params = new URLSearchParams();
  const set = (name, value) => {
    if (value !== '') params.set(name, value);
  };
  set('id', form.elements.id.value.trim());
  set('state', form.elements.state.value);
  set('group', form.elements.group.value.trim());
  set('from', timeOf(form.elements.from));
  set('to', timeOf(form.elements.to));
  return params;
}

/** The time a search's range bounds, for a row: due, started, or ended. */
function timeOfJob(j) {
  if (j.state === 'active' && j.lease) return j.lease.startedAt;
  return j.diedAt ?? j.completedAt ?? j.cancelledAt ?? j.runAt;
}

function row(j) {
  return el(
    'tr',
    { 'data-id': j.id, 'data-state': 'search', class: view.inspected === j.id ? 'selected' : '' },
    el('td', { class: 'mono' }, j.id),
    el('td', {}, el('span', { class: `state ${j.state}` }, j.state)),
    el('td', { title: new Date(timeOfJob(j)).toISOString() }, fmtRel(timeOfJob(j))),
    j.group !== null
      ? el('td', { class: 'mono' }, j.group)
      : el('td', { class: 'n' }, j.priority ? `prio ${j.priority}` : ''),
    el('td', { class: 'mono dim' }, j.lastError ? `${j.lastError.name}: ${j.lastError.message}` : j.preview),
  );
}

/** Run the search for the page `search.page`, and show it. */
async function show() {
  const params = new URLSearchParams(search.params);
  params.set('limit', String(ROWS));
  const cursor = search.cursors[search.page];
  if (cursor) params.set('cursor', cursor);
  const body = $('#table-search tbody');
  const info = $('[data-pageinfo="search"]');
  $('#search-results').hidden = false;
  try {
    const page = await getJson(`/queues/${encodeURIComponent(boot.queue)}/search?${params}`);
    search.next = page.cursor;
    const empty =
      page.cursor === null
        ? search.page === 0
          ? 'no jobs found'
          : 'no more jobs'
        : 'none in the part of the queue this page looked at: next › goes on';
    body.replaceChildren(
      ...(page.jobs.length === 0
        ? [el('tr', { class: 'empty' }, el('td', { colspan: '5', class: 'muted' }, empty))]
        : page.jobs.map(row)),
    );
    info.textContent = `page ${search.page + 1}${page.cursor === null ? ', the last' : ''}`;
  } catch (err) {
    search.next = null;
    body.replaceChildren(el('tr', { class: 'empty' }, el('td', { colspan: '5', class: 'bad' }, err.message)));
    info.textContent = '';
  }
  $('[data-search="prev"]').disabled = search.page === 0;
  $('[data-search="next"]').disabled = search.next === null;
}

/** Wire the search form and its pager (the queue page only). */
export function wireSearch() {
  const form = $('#search-form');
  if (!form) return;
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    search.params = paramsOf(form).toString();
    search.cursors = [null];
    search.page = 0;
    void show();
  });
  form.addEventListener('reset', () => {
    search.params = null;
    $('#search-results').hidden = true;
  });
  document.addEventListener('click', (event) => {
    const button = event.target.closest('button[data-search]');
    if (!button || search.params === null) return;
    if (button.dataset.search === 'next' && search.next !== null) {
      search.cursors[search.page + 1] = search.next;
      search.page += 1;
    } else if (button.dataset.search === 'prev' && search.page > 0) {
      search.page -= 1;
    } else return;
    void show();
  });
}
