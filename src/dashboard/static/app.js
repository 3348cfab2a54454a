// The delayq dashboard page: polls the JSON API, draws counts, charts (uPlot) and tables, and sends
// actions as same-origin JSON POSTs carrying the CSRF token from the #boot block.
/* global uPlot, document, window, fetch, setTimeout, clearTimeout, confirm, CSS, Node */
'use strict';

(function () {
  const boot = JSON.parse(document.getElementById('boot').textContent);
  const api = (path) => `${boot.base}/api${path}`;
  const REFRESH_MS = 2000;
  const PAGE = 10;
  const STATES = ['scheduled', 'active', 'dead', 'completed', 'cancelled'];
  const offsets = { scheduled: 0, active: 0, dead: 0, completed: 0, cancelled: 0 };
  const totals = { scheduled: 0, active: 0, dead: 0, completed: 0, cancelled: 0 };
  let inspected = null;
  let skew = 0; // server clock minus this browser's clock, from the last overview

  const $ = (sel, root = document) => root.querySelector(sel);
  const el = (tag, attrs = {}, ...children) => {
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
  const fmtInt = (n) => Number(n).toLocaleString('en-US');
  // Lateness is in ms and often below 1: uPlot's default tick labels read '0,000' there.
  const fmtMs = (ms) => {
    if (ms >= 1000) return `${(ms / 1000).toLocaleString('en-US', { maximumFractionDigits: 2 })} s`;
    return `${ms.toLocaleString('en-US', { maximumFractionDigits: ms >= 10 ? 0 : 2 })} ms`;
  };
  const fmtTime = (ms) =>
    new Date(ms).toLocaleTimeString('en-GB', { hour12: false }) +
    '.' +
    String(new Date(ms).getMilliseconds()).padStart(3, '0');
  const fmtRel = (ms) => {
    const d = ms - (Date.now() + skew);
    const a = Math.abs(d);
    const text =
      a < 1000
        ? `${Math.round(a)} ms`
        : a < 60_000
          ? `${(a / 1000).toFixed(1)} s`
          : a < 3_600_000
            ? `${Math.floor(a / 60_000)} min ${Math.round((a % 60_000) / 1000)} s`
            : `${(a / 3_600_000).toFixed(1)} h`;
    return d >= 0 ? `in ${text}` : `${text} ago`;
  };

  async function getJson(path) {
    const res = await fetch(api(path), {
      headers: { accept: 'application/json' },
      credentials: 'same-origin',
    });
    const body = await res.json().catch(() => ({ error: res.statusText }));
    if (!res.ok) throw new Error(body.error || res.statusText);
    return body;
  }

  async function post(path) {
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

  let toastTimer;
  function toast(text, kind = 'ok') {
    const node = $('#toast');
    node.textContent = text;
    node.className = `toast show ${kind}`;
    clearTimeout(toastTimer);
    toastTimer = setTimeout(() => (node.className = 'toast'), 3500);
  }

  function setStatus(ok, text) {
    const node = $('#clock');
    if (node) {
      node.textContent = text;
      node.classList.toggle('offline', !ok);
    }
  }

  // ---------- queue list ----------
  async function refreshQueues() {
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
                  { colspan: '5', class: 'muted' },
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

  // ---------- charts ----------
  const charts = {};
  function chartWidth(id) {
    return Math.max(260, $(id).clientWidth || 300);
  }
  function makeCharts() {
    const axis = { stroke: '#6b7280', grid: { stroke: '#eef0f3' }, ticks: { stroke: '#eef0f3' } };
    charts.due = new uPlot(
      {
        width: chartWidth('#chart-due'),
        height: 170,
        legend: { show: false },
        cursor: { y: false },
        scales: { x: { time: false } },
        axes: [
          { ...axis, values: (u, v) => v.map((m) => `+${m}m`) },
          { ...axis, size: 44 },
        ],
        series: [
          {},
          {
            label: 'due',
            fill: 'rgba(79,70,229,0.55)',
            stroke: '#4f46e5',
            paths: uPlot.paths.bars({ size: [0.8, 24] }),
            points: { show: false },
          },
        ],
      },
      [[], []],
      $('#chart-due'),
    );
    charts.throughput = new uPlot(
      {
        width: chartWidth('#chart-throughput'),
        height: 170,
        legend: { show: true, live: false },
        axes: [axis, { ...axis, size: 40 }],
        series: [
          {},
          { label: 'completed', stroke: '#059669', width: 2, fill: 'rgba(5,150,105,0.08)' },
          { label: 'retried', stroke: '#d97706', width: 1.5 },
          { label: 'dead', stroke: '#dc2626', width: 1.5 },
        ],
      },
      [[], [], [], []],
      $('#chart-throughput'),
    );
    charts.lateness = new uPlot(
      {
        width: chartWidth('#chart-lateness'),
        height: 170,
        legend: { show: true, live: false },
        // At least 0-1 ms, so jobs that all start within a millisecond still get distinct ticks.
        scales: { y: { range: (u, min, max) => [0, Math.max(1, max * 1.1)] } },
        axes: [
          axis,
          {
            ...axis,
            size: 60,
            values: (u, splits) => {
              const labels = splits.map(fmtMs);
              // Canvas text is invisible to screen readers (and to tests): say the scale in words.
              u.root.setAttribute('aria-label', `lateness chart, y axis: ${labels.join(' / ')}`);
              return labels;
            },
          },
        ],
        series: [
          {},
          { label: 'avg', stroke: '#2563eb', width: 2, spanGaps: true, points: { show: true, size: 5 } },
          {
            // The upper bound of the histogram bucket holding the 99th percentile.
            label: 'p99 ≤',
            stroke: '#93c5fd',
            width: 1,
            dash: [4, 3],
            spanGaps: true,
            points: { show: true, size: 4 },
          },
        ],
      },
      [[], [], []],
      $('#chart-lateness'),
    );
    window.addEventListener('resize', () => {
      for (const [key, id] of [
        ['due', '#chart-due'],
        ['throughput', '#chart-throughput'],
        ['lateness', '#chart-lateness'],
      ]) {
        charts[key].setSize({ width: chartWidth(id), height: 170 });
      }
    });
  }

  // Sum per-second samples into 5 s buckets, so a few jobs a second read as a rate, not as spikes.
  function rebucket(t, ys, size, mode) {
    const outT = [];
    const outYs = ys.map(() => []);
    for (let i = 0; i < t.length; i += size) {
      outT.push(t[Math.min(i + size - 1, t.length - 1)]);
      ys.forEach((y, k) => {
        const part = y.slice(i, i + size).filter((v) => v !== null);
        if (mode[k] === 'rate') outYs[k].push(part.reduce((a, b) => a + b, 0) / size);
        else if (mode[k] === 'max') outYs[k].push(part.length ? Math.max(...part) : null);
        else outYs[k].push(part.length ? part.reduce((a, b) => a + b, 0) / part.length : null);
      });
    }
    return [outT, ...outYs];
  }

  function drawCharts(o) {
    const minutes = o.due.counts.map((_, i) => i + 1);
    charts.due.setData([minutes, o.due.counts]);
    const total = o.due.counts.reduce((a, b) => a + b, 0);
    $('#due-total').textContent = o.due.overdue
      ? `${fmtInt(total)} jobs, ${fmtInt(o.due.overdue)} due now`
      : `${fmtInt(total)} jobs`;
    // From the queue's counters in Redis: every worker's activity, wherever it runs.
    const a = o.activity;
    charts.throughput.setData(rebucket(a.t, [a.completed, a.failed, a.dead], 5, ['rate', 'rate', 'rate']));
    charts.lateness.setData(rebucket(a.t, [a.latenessAvg, a.latenessP99], 5, ['avg', 'max']));
  }

  // ---------- tables ----------
  const cells = {
    scheduled: (j) => [
      el('td', { class: 'mono' }, j.id),
      el('td', { title: new Date(j.runAt).toISOString() }, fmtRel(j.runAt)),
      // The group when there is one (a grouped job has no priority); else the priority, blank for
      // the default 0, so the set ones stand out.
      j.group !== null
        ? el('td', { class: 'mono' }, j.group)
        : el('td', { class: 'n' }, j.priority ? `prio ${j.priority}` : ''),
      el('td', { class: 'n' }, `${j.attempts}/${j.maxAttempts}`),
      el('td', { class: 'mono dim' }, j.preview),
    ],
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
  const columns = { scheduled: 5, active: 5, dead: 4, completed: 3, cancelled: 2 };

  function actionButtons(state, id) {
    if (!boot.canAct) return [];
    const b = (action, label, cls) =>
      el('button', { type: 'button', class: `small ${cls}`, 'data-action': action, 'data-id': id }, label);
    if (state === 'dead') return [b('retry', 'Retry', 'primary'), b('remove', 'Remove', 'ghost')];
    // A running job can be cancelled too: its holder's signal aborts (issue 15).
    if (state === 'scheduled' || state === 'active') return [b('cancel', 'Cancel', 'ghost')];
    return [];
  }

  async function refreshTable(state) {
    const page = await getJson(
      `/queues/${encodeURIComponent(boot.queue)}/jobs?state=${state}&offset=${offsets[state]}&limit=${PAGE}`,
    );
    totals[state] = page.total;
    if (page.items.length === 0 && offsets[state] > 0 && page.total > 0) {
      offsets[state] = Math.max(0, Math.floor((page.total - 1) / PAGE) * PAGE);
      return refreshTable(state);
    }
    const body = $(`#table-${state} tbody`);
    // Rows of scheduled and dead jobs carry their actions; a running job's are in the inspector.
    const canAct = boot.canAct && (state === 'scheduled' || state === 'dead');
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
              { 'data-id': j.id, 'data-state': state, class: inspected === j.id ? 'selected' : '' },
              ...cells[state](j),
            );
            if (canAct) row.append(el('td', { class: 'row-actions' }, ...actionButtons(state, j.id)));
            return row;
          })),
    );
    $(`[data-count="${state}"]`).textContent = fmtInt(page.total);
    const from = page.total === 0 ? 0 : offsets[state] + 1;
    const to = Math.min(offsets[state] + PAGE, page.total);
    $(`[data-pageinfo="${state}"]`).textContent = `${fmtInt(from)}–${fmtInt(to)} of ${fmtInt(page.total)}`;
    $(`[data-page="prev"][data-for="${state}"]`).disabled = offsets[state] === 0;
    $(`[data-page="next"][data-for="${state}"]`).disabled = offsets[state] + PAGE >= page.total;
  }

  async function inspect(id) {
    inspected = id;
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
      ].filter(([, v]) => v !== null && v !== undefined);
      // replaceChildren would show a null as the text "null": only the parts this job has.
      const parts = [
        el('h2', {}, 'Job inspector'),
        el(
          'dl',
          { class: 'facts' },
          ...rows.flatMap(([k, v]) => [
            el('dt', {}, k),
            el('dd', { class: k === 'state' ? `state ${v}` : '' }, String(v)),
          ]),
        ),
        el('div', { class: 'row-actions' }, ...actionButtons(job.state, job.id)),
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
      ];
      panel.replaceChildren(...parts.filter((part) => part !== null));
    } catch (err) {
      panel.replaceChildren(
        el('h2', {}, 'Job inspector'),
        el('p', { class: 'muted' }, `${id}: ${err.message}`),
      );
    }
  }

  // ---------- groups ----------
  // The top groups by backlog, with running / limit and their pause buttons; hidden until the
  // queue has a group.
  async function refreshGroups() {
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

  async function refreshQueue() {
    try {
      const o = await getJson(`/queues/${encodeURIComponent(boot.queue)}`);
      skew = o.now - Date.now();
      $('#c-scheduled').textContent = fmtInt(o.counts.scheduled);
      $('#c-due').textContent = fmtInt(o.counts.due);
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

  async function act(action, id) {
    const q = encodeURIComponent(boot.queue);
    try {
      if (action === 'pause' || action === 'resume') {
        await post(`/queues/${q}/${action}`);
        toast(action === 'pause' ? 'paused: workers start no job until resumed' : 'resumed');
      } else if (action === 'group-pause' || action === 'group-resume') {
        const verb = action === 'group-pause' ? 'pause' : 'resume';
        await post(`/queues/${q}/groups/${encodeURIComponent(id)}/${verb}`);
        toast(
          verb === 'pause' ? `group ${id} paused: workers start none of its jobs` : `group ${id} resumed`,
        );
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
    if (inspected) await inspect(inspected);
  }

  function wireQueuePage() {
    makeCharts();
    document.addEventListener('click', (event) => {
      const target = event.target.closest('button, tr[data-id]');
      if (!target) return;
      if (target.matches('button[data-action]')) {
        event.stopPropagation();
        target.disabled = true;
        void act(target.dataset.action, target.dataset.id);
      } else if (target.matches('button[data-page]')) {
        const state = target.dataset.for;
        offsets[state] = Math.max(0, offsets[state] + (target.dataset.page === 'next' ? PAGE : -PAGE));
        void refreshTable(state);
      } else if (target.id === 'pause-toggle') {
        target.disabled = true;
        void act(target.dataset.paused ? 'resume' : 'pause');
      } else if (target.id === 'retry-all') {
        if (confirm(`Retry all ${fmtInt(totals.dead)} dead jobs of ${boot.queue}?`)) void act('retry-all');
      } else if (target.matches('tr[data-id]')) {
        void inspect(target.dataset.id);
      }
    });
  }

  let timer;
  function loop(fn) {
    const tick = async () => {
      if (!document.hidden) await fn();
      timer = setTimeout(tick, REFRESH_MS);
    };
    void tick();
    document.addEventListener('visibilitychange', () => {
      if (!document.hidden) {
        clearTimeout(timer);
        void tick();
      }
    });
  }

  if (boot.queue === null) loop(refreshQueues);
  else {
    wireQueuePage();
    loop(refreshQueue);
  }
})();
