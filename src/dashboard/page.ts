/**
 * The HTML the dashboard serves: a shell per page that loads the static script and style, with the
 * page's settings in a JSON block (data, not script, so the CSP needs no inline scripts).
 */

/** Settings the page script reads from the #boot block. */
export interface PageBoot {
  base: string;
  queue: string | null;
  /** Actions are shown (a token is set, the user signed in, and not read-only). */
  canAct: boolean;
  readOnly: boolean;
  /** Sent back as X-CSRF-Token with every action; empty when actions are off. */
  csrf: string;
}

/** Escape text for HTML element content and attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function shell(title: string, boot: PageBoot, body: string): string {
  // '<' is escaped so no payload text can close the JSON block early.
  const json = JSON.stringify(boot).replace(/</g, '\\u003c');
  // app.js is an ES module that imports its parts from beside it; a module runs after the deferred
  // uPlot script before it, in document order, so uPlot is defined by then.
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${boot.base}/assets/uPlot.min.css">
<link rel="stylesheet" href="${boot.base}/assets/app.css">
<script type="application/json" id="boot">${json}</script>
<script src="${boot.base}/assets/uPlot.iife.min.js" defer></script>
<script type="module" src="${boot.base}/assets/app.js"></script>
</head>
<body>
<header class="top">
  <a class="brand" href="${boot.base}/">delayq</a>
  <span class="crumb">${boot.queue === null ? 'queues' : escapeHtml(boot.queue)}</span>
  <span class="mode" id="mode">${boot.readOnly ? 'read-only' : boot.canAct ? 'actions on' : 'view only'}</span>
  <span class="clock" id="clock"></span>
</header>
${body}
<div id="toast" class="toast" role="status" aria-live="polite"></div>
</body>
</html>
`;
}

/** The list of queues. */
export function queuesPage(boot: PageBoot): string {
  return shell(
    'delayq — queues',
    boot,
    `<main class="wrap">
  <h1>Queues</h1>
  <table class="grid" id="queues"><thead><tr><th>queue</th><th class="n">scheduled</th><th class="n">due now</th><th class="n">waiting for children</th><th class="n">active</th><th class="n">dead</th></tr></thead><tbody><tr><td colspan="6" class="muted">loading…</td></tr></tbody></table>
</main>`,
  );
}

function table(state: string, title: string, columns: string[]): string {
  return `<section class="panel" data-state="${state}">
  <div class="panel-head"><h2>${title} <span class="count" data-count="${state}"></span></h2>
    <div class="pager"><button type="button" class="ghost" data-page="prev" data-for="${state}">‹ prev</button><span class="pageinfo" data-pageinfo="${state}"></span><button type="button" class="ghost" data-page="next" data-for="${state}">next ›</button></div>
  </div>
  <table class="grid jobs" id="table-${state}"><thead><tr>${columns.map((c) => `<th>${c}</th>`).join('')}</tr></thead><tbody></tbody></table>
</section>`;
}

/**
 * The search box (static/search.js): queue.search's filters, and its results, paged by cursor;
 * a result row opens the inspector like any table's.
 */
function searchPanel(): string {
  const states = ['scheduled', 'waiting-children', 'active', 'dead', 'completed', 'cancelled'];
  return `<section class="panel search" id="search-panel">
  <div class="panel-head"><h2>Search</h2><span class="muted">by id prefix, state, group and time (due, started or ended)</span></div>
  <form id="search-form" class="search-form" autocomplete="off">
    <input name="id" type="search" placeholder="id prefix" aria-label="id prefix">
    <select name="state" aria-label="state"><option value="">any state</option>${states.map((s) => `<option value="${s}">${s}</option>`).join('')}</select>
    <input name="group" placeholder="group" aria-label="group">
    <label>from <input name="from" type="datetime-local" step="1" aria-label="from"></label>
    <label>to <input name="to" type="datetime-local" step="1" aria-label="to"></label>
    <button type="submit" class="primary">Search</button><button type="reset" class="ghost">Clear</button>
  </form>
  <div id="search-results" hidden>
    <div class="panel-head"><span class="pageinfo" data-pageinfo="search"></span><div class="pager"><button type="button" class="ghost" data-search="prev">‹ prev</button><button type="button" class="ghost" data-search="next">next ›</button></div></div>
    <table class="grid jobs" id="table-search"><thead><tr><th>id</th><th>state</th><th>when</th><th>group / priority</th><th>payload / reason</th></tr></thead><tbody></tbody></table>
  </div>
</section>`;
}

/** The page of one queue: counts, charts, search, tables, inspector. */
export function queuePage(boot: PageBoot): string {
  return shell(
    `delayq — ${boot.queue ?? ''}`,
    boot,
    `<main class="wrap">
  <div class="title-row"><h1>${escapeHtml(boot.queue ?? '')}</h1><span class="badge paused" id="paused-badge" hidden>paused</span>
    <div class="actions-global">${boot.canAct ? '<button type="button" id="pause-toggle" data-paused="" hidden>Pause</button> <button type="button" class="danger" id="retry-all">Retry all dead</button>' : ''}</div>
  </div>
  <section class="cards">
    <div class="card"><div class="label">scheduled</div><div class="value" id="c-scheduled">–</div><div class="sub" id="c-next"></div></div>
    <div class="card"><div class="label">due now</div><div class="value" id="c-due">–</div><div class="sub" id="c-overdue"></div></div>
    <div class="card"><div class="label">waiting for children</div><div class="value" id="c-waiting-children">–</div><div class="sub">flow parents, not in scheduled</div></div>
    <div class="card"><div class="label">active</div><div class="value" id="c-active">–</div><div class="sub">held by workers</div></div>
    <div class="card dead"><div class="label">dead</div><div class="value" id="c-dead">–</div><div class="sub">attempts spent</div></div>
    <div class="card"><div class="label">completed</div><div class="value" id="c-completed">–</div><div class="sub">kept for a while</div></div>
    <div class="card"><div class="label">cancelled</div><div class="value" id="c-cancelled">–</div><div class="sub">kept for a while</div></div>
  </section>
  <section class="charts">
    <div class="panel chart"><h2>Due over the next hour <span class="muted" id="due-total"></span></h2><div id="chart-due"></div></div>
    <div class="panel chart"><h2>Throughput <span class="muted">jobs/s, last 5 min</span></h2><div id="chart-throughput"></div></div>
    <div class="panel chart"><h2>Lateness <span class="muted">ms, start − due</span></h2><div id="chart-lateness"></div></div>
  </section>
  <section class="panel groups" id="groups-panel" hidden>
    <div class="panel-head"><h2>Groups <span class="muted" id="groups-bound"></span></h2><span class="muted">top by backlog</span></div>
    <table class="grid" id="table-groups"><thead><tr><th>group</th><th class="n">waiting</th><th class="n">due</th><th class="n">running / limit</th><th></th></tr></thead><tbody></tbody></table>
  </section>
  <div class="tables">
    <div class="col">
      ${searchPanel()}
      ${table('scheduled', 'Scheduled', ['id', 'due', 'group / priority', 'attempts', 'payload'])}
      ${table('waiting-children', 'Waiting for children', ['id', 'due (at the earliest)', 'group / priority', 'attempts', 'payload'])}
      ${table('active', 'Active', ['id', 'group', 'worker', 'lease until', 'attempt'])}
      ${table('dead', 'Dead', ['id', 'died', 'attempts', 'reason'])}
      ${table('completed', 'Completed', ['id', 'completed', 'result'])}
      ${table('cancelled', 'Cancelled', ['id', 'cancelled'])}
    </div>
    <aside class="panel inspector" id="inspector"><h2>Job inspector</h2><p class="muted">Click a job to see everything about it.</p></aside>
  </div>
</main>`,
  );
}

/**
 * The sign-in page shown when a token is set and the browser has no session: a form that posts
 * the token (never in an address, so no server logs it), and signin.js, which submits a sign-in
 * link's `#token=` fragment with it. `next` is the page to go to after signing in.
 */
export function signInPage(base: string, problem: 'wrong' | 'in-query' | null, next: string): string {
  const message =
    problem === 'wrong'
      ? '<p class="error">That token is not right.</p>'
      : problem === 'in-query'
        ? '<p class="error">A token in the address (<code>?token=</code>) is not accepted: servers write addresses to their logs. Sign in with this form, a link ending in <code>#token=…</code>, or send <code>Authorization: Bearer &lt;token&gt;</code>.</p>'
        : '';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>delayq — sign in</title><link rel="stylesheet" href="${base}/assets/app.css">
<script src="${base}/assets/signin.js" defer></script></head>
<body><header class="top"><span class="brand">delayq</span></header>
<main class="wrap narrow"><h1>Sign in</h1>
<p class="muted">This dashboard is protected by a token (<code>--token</code> or <code>DELAYQ_DASHBOARD_TOKEN</code>).</p>
${message}
<form id="signin" method="post" action="${base}/session"${problem === 'wrong' ? ' data-failed="1"' : ''}><input type="hidden" name="next" value="${escapeHtml(next)}"><input type="password" name="token" autocomplete="current-password" placeholder="token" required autofocus> <button type="submit">Sign in</button></form>
</main></body></html>
`;
}
