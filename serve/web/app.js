/* batchlab serve: the dashboard. Plain ES2020, no modules, no build step; dygraphs (Debian's libjs-dygraphs)
 * draws the line charts and is the only library.
 * The whole view state lives in the URL hash (#view=curves&sweep=ID&runs=a,b&y=val_acc&x=samples), so a
 * link reopens the view and back/forward walk through it. The page polls /api/status every 2 s and
 * refetches the current view when data_version changes. */
'use strict';
(function () {

const VIEWS = ['overview', 'runs', 'curves', 'scaling', 'layers', 'lr', 'noise'];
const METRICS = ['train_loss', 'val_acc', 'val_loss', 'test_acc', 'test_loss', 'train_acc', 'train_loss_eval',
  'gap_acc', 'gap_loss', 'lr', 'grad_norm', 'samples_per_s'];
const AXES = { step: 'step', samples: 'samples', wall_s: 'training time (s)', epoch: 'epoch' };
const DEFAULT_COLS = ['status', 'optimizer', 'global_batch', 'base_lr', 'peak_lr', 'seed', 'last_step',
  'final_val_acc', 'final_test_acc', 'final_gap_acc', 'train_s', 'run_id'];
const COL_LABEL = {
  global_batch: 'batch', micro_batch: 'micro', base_lr: 'base lr', peak_lr: 'peak lr', last_step: 'step',
  final_val_acc: 'val acc', final_test_acc: 'test acc', final_gap_acc: 'gap acc', final_train_acc: 'train acc',
  final_val_loss: 'val loss', final_test_loss: 'test loss', final_train_loss: 'train loss', final_gap_loss: 'gap loss',
  train_s: 'train time', run_id: 'run', warmup_steps: 'warmup', accum_steps: 'accum', world_size: 'world',
  total_steps: 'total steps',
};
const PALETTE = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f',
  '#bcbd22', '#17becf', '#393b79', '#e6550d', '#31a354', '#ad494a', '#756bb1', '#637939', '#d6616b',
  '#3182bd', '#843c39', '#7b4173'];
const VIRIDIS = ['#440154', '#482878', '#3e4a89', '#31688e', '#26828e', '#1f9e89', '#35b779', '#6ece58',
  '#b5de2b', '#fde725'];
const MAX_DEFAULT_RUNS = 16;
const POLL_MS = 2000;

// ---------------------------------------------------------------------------------------- helpers
const $ = (sel, root) => (root || document).querySelector(sel);

function h(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  if (attrs) {
    for (const [k, v] of Object.entries(attrs)) {
      if (v == null || v === false) continue;
      if (k === 'class') e.className = v;
      else if (k === 'text') e.textContent = v;
      else if (k === 'style') Object.assign(e.style, v);
      else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else if (k in e && typeof v !== 'string') e[k] = v;
      else e.setAttribute(k, v === true ? '' : v);
    }
  }
  for (const kid of kids.flat()) {
    if (kid == null || kid === false) continue;
    e.append(kid instanceof Node ? kid : String(kid));
  }
  return e;
}

const isNum = (v) => typeof v === 'number' && isFinite(v);

function trimNum(s) {
  return s.includes('e') ? s.replace(/\.?0+e/, 'e').replace(/e\+?(-?)0*(\d)/, 'e$1$2') : (s.includes('.') ? s.replace(/\.?0+$/, '') : s);
}

// 1.2e-3, 0.125, 12.5, 384, 12.3k, 1.5M
function fmtNum(v, digits) {
  if (v == null || v === '') return '–';
  if (typeof v !== 'number') { const n = Number(v); if (!isFinite(n) || String(v).trim() === '') return String(v); v = n; }
  if (!isFinite(v)) return String(v);
  const a = Math.abs(v);
  if (a === 0) return '0';
  if (Number.isInteger(v) && a < 1e4) return String(v);
  if (a >= 1e9) return trimNum((v / 1e9).toFixed(2)) + 'G';
  if (a >= 1e6) return trimNum((v / 1e6).toFixed(2)) + 'M';
  if (a >= 1e4) return trimNum((v / 1e3).toFixed(1)) + 'k';
  if (a >= 100) return String(Math.round(v));
  if (a < 1e-2) return trimNum(v.toExponential((digits || 3) - 2 < 1 ? 1 : (digits || 3) - 2));
  return trimNum(v.toPrecision(digits || 3));
}

// 8192 -> 8k, 1536 -> 1.5k, 128 -> 128
function fmtBatch(v) {
  if (!isNum(v)) return v == null ? '–' : String(v);
  if (Math.abs(v) >= 1024 && v % 512 === 0) return trimNum((v / 1024).toFixed(1)) + 'k';
  if (Math.abs(v) >= 1e6) return fmtNum(v);
  return String(Math.round(v * 100) / 100);
}

function fmtPct(v, signed) {
  if (!isNum(v)) return '–';
  const s = (v * 100).toFixed(Math.abs(v) < 0.1 && signed ? 2 : 1) + '%';
  return signed && v > 0 ? '+' + s : s;
}

function fmtDur(s) {
  if (!isNum(s)) return '–';
  if (s < 10) return trimNum(s.toFixed(1)) + ' s';
  if (s < 90) return Math.round(s) + ' s';
  if (s < 90 * 60) return Math.round(s / 60) + ' min';
  if (s < 48 * 3600) return trimNum((s / 3600).toFixed(1)) + ' h';
  return trimNum((s / 86400).toFixed(1)) + ' d';
}

function fmtTime(t) { return t ? String(t).replace('T', ' ').replace(/\.\d+Z?$|Z$/, '') : '–'; }
const shortId = (id) => (id == null ? '–' : String(id).slice(0, 8));
const isAccMetric = (m) => /(^|_)acc$/.test(m || '');

function fmtMetric(m, v) {
  if (isAccMetric(m)) return fmtPct(v, /gap/.test(m));
  return fmtNum(v);
}

function debounce(fn, ms) { let t; return (...a) => { clearTimeout(t); t = setTimeout(() => fn(...a), ms); }; }

function hashStr(s) { let x = 2166136261; for (let i = 0; i < s.length; i++) { x ^= s.charCodeAt(i); x = Math.imul(x, 16777619); } return x >>> 0; }

// ---------------------------------------------------------------------------------------- URL state
let S = readHash();

function readHash() {
  const p = new URLSearchParams(location.hash.replace(/^#/, ''));
  const s = { filter: [] };
  for (const [k, v] of p) { if (k === 'filter') s.filter.push(v); else s[k] = v; }
  if (!VIEWS.includes(s.view)) s.view = 'overview';
  s.runs = s.runs ? s.runs.split(',').filter(Boolean) : [];
  s.keys = s.keys ? s.keys.split(',').filter(Boolean) : [];
  return s;
}

function enc(v) { return encodeURIComponent(v).replace(/%2C/gi, ',').replace(/%3A/gi, ':').replace(/%2F/gi, '/'); }

function writeHash(s) {
  const parts = ['view=' + s.view];
  if (s.sweep != null && s.sweep !== '') parts.push('sweep=' + enc(s.sweep));
  if (s.runs && s.runs.length) parts.push('runs=' + s.runs.map(enc).join(','));
  if (s.keys && s.keys.length) parts.push('keys=' + s.keys.map(enc).join(','));
  for (const k of ['y', 'x', 'logy', 'sort', 'order', 'run', 'metric', 'lx', 'llogy']) {
    if (s[k] != null && s[k] !== '') parts.push(k + '=' + enc(s[k]));
  }
  for (const f of s.filter || []) parts.push('filter=' + enc(f));
  return '#' + parts.join('&');
}

// push: a new history entry and a re-render; replace: rewrite the current entry quietly
function setState(patch, replace) {
  const next = Object.assign({}, S, patch);
  const hash = writeHash(next);
  if (replace) { S = next; history.replaceState(null, '', hash); updateChrome(); return; }
  if (hash === location.hash) { S = next; render(false); return; }
  location.hash = hash;   // hashchange -> render
}

// ---------------------------------------------------------------------------------------- API
class ApiError extends Error {
  constructor(url, msg, status) { super(msg); this.url = url; this.status = status; }
}

async function api(path, params) {
  const qs = [];
  for (const [k, v] of Object.entries(params || {})) {
    if (v == null || v === '') continue;
    for (const x of Array.isArray(v) ? v : [v]) qs.push(k + '=' + enc(x));
  }
  const url = '/api/' + path + (qs.length ? '?' + qs.join('&') : '');
  let r;
  try { r = await fetch(url, { cache: 'no-store' }); } catch (e) {
    throw new ApiError(url, 'cannot reach the server (' + (e.message || e) + ')', 0);
  }
  let body = null;
  try { body = await r.json(); } catch (e) { /* not JSON */ }
  if (!r.ok) {
    const what = body && body.error ? body.error + (body.param ? ' (parameter ' + body.param + ')' : '') : r.statusText;
    throw new ApiError(url, 'GET ' + url + ': ' + r.status + ' ' + what, r.status);
  }
  if (body == null) throw new ApiError(url, 'GET ' + url + ': the answer is not JSON', r.status);
  return body;
}

// ---------------------------------------------------------------------------------------- data cache
let cache = newCache();
function newCache() { return { sweeps: null, runs: new Map() }; }

async function getSweeps() {
  if (!cache.sweeps) cache.sweeps = api('sweeps').then((d) => d.sweeps || []);
  try { return await cache.sweeps; } catch (e) { cache.sweeps = null; throw e; }
}

function currentSweep(sweeps) {
  if (!sweeps.length) return null;
  if (S.sweep != null) {
    const hit = sweeps.find((s) => sweepKey(s) === S.sweep);
    if (hit) return hit;
  }
  return sweeps.find((s) => s.sweep_id != null) || sweeps[0];
}

// the API cannot ask for the runs outside any sweep: the page names that entry '-' in the URL, asks for
// every run and keeps those whose sweep_id is null
const sweepKey = (s) => (s.sweep_id == null ? '-' : String(s.sweep_id));
let sweepId = null;   // the sweep the views show (null: runs without a sweep, or none chosen)
let noSweep = false;  // the entry of the runs outside any sweep is chosen
const sweepParam = () => (sweepId == null ? null : sweepId);
const inSweep = (r) => !noSweep || r.sweep_id == null;

// every run of the current sweep, in a fixed order that defines each run's color
async function sweepRuns() {
  const key = String(sweepId);
  if (!cache.runs.has(key)) cache.runs.set(key, api('runs', { sweep: sweepParam() }).then((d) => {
    const rows = (d.rows || []).filter(inSweep);
    rows.sort((a, b) => cmp(a.optimizer, b.optimizer) || cmp(a.global_batch, b.global_batch) ||
      cmp(a.base_lr, b.base_lr) || cmp(a.seed, b.seed) || cmp(a.run_id, b.run_id));
    rows.forEach((r, i) => { colorIndex.set(r.run_id, i); });
    return rows;
  }));
  try { return await cache.runs.get(key); } catch (e) { cache.runs.delete(key); throw e; }
}

function cmp(a, b) {
  if (a == null && b == null) return 0;
  if (a == null) return 1;
  if (b == null) return -1;
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  return String(a).localeCompare(String(b));
}

const colorIndex = new Map();
function runColor(id) {
  const i = colorIndex.get(id);
  if (i != null && i < PALETTE.length) return PALETTE[i];
  return 'hsl(' + (hashStr(String(id)) % 360) + ',65%,42%)';
}
const groupColors = new Map();
function groupColor(name) {
  if (!groupColors.has(name)) groupColors.set(name, PALETTE[groupColors.size % PALETTE.length]);
  return groupColors.get(name);
}

function runLabel(r) {
  return r.optimizer + ' B=' + fmtBatch(r.global_batch) + ' lr=' + fmtNum(r.base_lr) + ' seed=' + r.seed;
}

// the runs a plot shows: the selection, else the sweep's first 16 (finished ones first)
async function plotRuns() {
  if (S.runs.length) return { ids: S.runs.slice(0, 64), note: S.runs.length + ' selected run' + (S.runs.length > 1 ? 's' : '') };
  const rows = await sweepRuns();
  const rank = (r) => (r.status === 'done' ? 0 : r.status === 'running' ? 1 : 2);
  const pick = rows.slice().sort((a, b) => rank(a) - rank(b) || colorIndex.get(a.run_id) - colorIndex.get(b.run_id))
    .slice(0, MAX_DEFAULT_RUNS);
  pick.sort((a, b) => colorIndex.get(a.run_id) - colorIndex.get(b.run_id));
  return {
    ids: pick.map((r) => r.run_id),
    note: 'no runs selected: showing ' + pick.length + ' of ' + rows.length + ' runs of the sweep (select runs in the Runs tab)',
  };
}

// ---------------------------------------------------------------------------------------- errors and status
let statusErr = null;
let fetchErr = null;
let dataVersion = null;

function showBanner() {
  const b = $('#error-banner');
  const msg = statusErr || (fetchErr && fetchErr.message);
  if (msg) { b.textContent = msg; b.hidden = false; } else { b.hidden = true; b.textContent = ''; }
}

async function poll() {
  let st = null;
  try {
    const r = await fetch('/api/status', { cache: 'no-store' });
    st = await r.json();
    if (!r.ok) throw new Error(r.status + ' ' + (st && st.error));
  } catch (e) {
    st = null;
    statusErr = 'Lost contact with the server: ' + (e.message || e) + '. Retrying every 2 s.';
    $('#live').className = 'live bad';
    $('#live-text').textContent = 'offline';
  }
  if (st) {
    statusErr = st.error ? 'Database error: ' + st.error : null;
    $('#live').className = st.error ? 'live bad' : 'live ok';
    $('#live-text').textContent = 'live · ' + new Date().toLocaleTimeString();
    const line = $('#dbline');
    line.replaceChildren('db ', h('b', { text: st.db || '?' }), ' · schema v' + (st.schema_version == null ? '?' : st.schema_version) +
      (st.batchlab ? ' · batchlab ' + st.batchlab : ''));
    line.title = st.db || '';
    const changed = dataVersion !== null && st.data_version !== dataVersion;
    dataVersion = st.data_version;
    if (changed) { cache = newCache(); render(true); }
    else if (fetchErr && (fetchErr.status === 0 || fetchErr.status >= 500) && !st.error) render(true);   // recovered
  }
  showBanner();
  setTimeout(poll, POLL_MS);
}

// ---------------------------------------------------------------------------------------- render
let renderSeq = 0;
const views = {};

function updateChrome() {
  for (const a of document.querySelectorAll('#tabs a')) {
    const v = a.dataset.view;
    a.classList.toggle('active', v === S.view);
    a.href = writeHash(Object.assign({}, S, { view: v }));
  }
  const n = S.runs.length;
  $('#selection-info').textContent = n ? n + ' run' + (n > 1 ? 's' : '') + ' selected' : '';
}

async function render(refresh) {
  const seq = ++renderSeq;
  const stale = () => seq !== renderSeq;
  updateChrome();
  for (const v of VIEWS) $('#view-' + v).hidden = v !== S.view;
  try {
    const sweeps = await getSweeps();
    if (stale()) return;
    const ctx0 = { sweeps };
    const cur = currentSweep(sweeps);
    sweepId = cur ? cur.sweep_id : null;
    noSweep = !!cur && cur.sweep_id == null && ctx0.sweeps.some((s) => s.sweep_id != null);
    const sel = $('#sweep-select');
    sel.replaceChildren(...sweeps.map((s) => h('option', {
      value: sweepKey(s), text: (s.name || s.sweep_id || 'runs outside a sweep') + ' (' + s.runs + ' runs)',
    })));
    if (cur) sel.value = sweepKey(cur);
    $('#sweep-picker').hidden = sweeps.length < 2;
    await views[S.view]({ refresh, stale, sweeps, sweep: cur });
    if (stale()) return;
    fetchErr = null;
  } catch (e) {
    if (stale()) return;
    console.warn(e);
    fetchErr = e instanceof ApiError ? e : new ApiError('', 'Error: ' + (e.message || e), -1);
  }
  showBanner();
}

function message(id, text) {
  const m = $('#' + id);
  if (text) { m.textContent = text; m.hidden = false; } else m.hidden = true;
}

// ---------------------------------------------------------------------------------------- overview
views.overview = async function (ctx) {
  const body = $('#overview-body');
  if (!ctx.sweeps.length) { body.replaceChildren(h('div', { class: 'message', text: 'The database holds no runs yet.' })); return; }
  body.replaceChildren(...ctx.sweeps.map((s) => sweepCard(s, ctx.sweep === s)));
};

// Runs that will take no more steps: all but planned, running and preempted (it resumes).
function endedRuns(s) {
  const st = s.statuses || {};
  return (s.runs || 0) - (st.planned || 0) - (st.running || 0) - (st.preempted || 0);
}

function sweepCard(s, current) {
  const id = s.sweep_id == null ? '' : String(s.sweep_id);
  const statuses = Object.entries(s.statuses || {}).sort((a, b) => b[1] - a[1]);
  const known = ['done', 'running', 'planned', 'failed', 'diverged', 'preempted', 'stopped', 'oom'];
  const pct = isNum(s.progress) ? Math.max(0, Math.min(1, s.progress)) : null;
  const kids = [
    h('h2', null, s.name || '(runs without a sweep)',
      s.sweep_id != null && s.sweep_id !== s.name ? h('span', { class: 'muted mono', text: s.sweep_id }) : null,
      h('span', { class: 'muted', text: s.created_at ? 'created ' + fmtTime(s.created_at) : '' }),
      h('a', { href: writeHash(Object.assign({}, S, { view: 'runs', sweep: sweepKey(s), runs: [], filter: [] })), text: 'runs →' }),
      s.sweep_id == null ? null : h('a', { href: writeHash(Object.assign({}, S, { view: 'scaling', sweep: id, runs: [] })), text: 'scaling →' })),
    h('div', null, statuses.length ? statuses.map(([st, n]) =>
      h('span', { class: 'badge bg-' + (known.includes(st) ? st : 'other'), title: st, text: n + ' ' + st })) :
      h('span', { class: 'muted', text: 'no runs' })),
    // progress is per run (1 once a run ended, early stops included), so the label counts runs,
    // not steps against the planned total, which a diverged or raced run never reaches
    h('div', { class: 'progress', title: 'mean over runs of each run\'s fraction: 1 once it ended, last_step / total_steps while it runs' },
      h('div', { class: 'bar', style: { width: ((pct || 0) * 100).toFixed(2) + '%' } }),
      h('div', { class: 'label', text: (pct == null ? 'progress unknown' : (pct * 100).toFixed(1) + '%') +
        ' · ' + endedRuns(s) + ' of ' + s.runs + ' runs ended · ' + fmtNum(s.steps_done) + ' steps taken' })),
    h('div', { class: 'kv' },
      h('div', null, h('span', { text: 'runs' }), h('b', { text: String(s.runs) })),
      h('div', null, h('span', { text: 'ETA' }), h('b', { class: 'eta', text: s.eta_s == null ? (pct === 1 ? 'finished' : '–') : fmtDur(s.eta_s) })),
      h('div', null, h('span', { text: 'started' }), h('b', { text: s.started_at ? fmtTime(s.started_at) :
        isNum(s.started_at_unix) ? fmtTime(new Date(s.started_at_unix * 1000).toISOString()) : '–' }))),
  ];
  // A study: its cells by status and its trials by outcome (what `sweep status` counts).
  if (s.study) {
    const counts = (o) => Object.entries(o || {}).map(([k, n]) => n + ' ' + k).join(' · ') || 'none yet';
    kids.push(h('div', { class: 'kv study-progress' },
      h('div', null, h('span', { text: 'study cells' }), h('b', { text: counts(s.study.cells) })),
      h('div', null, h('span', { text: 'trials' }), h('b', { text: counts(s.study.trials) }))));
  }
  // A Slurm-run sweep or study: the jobs of its runs that may still take steps.
  const jobs = s.scheduler_jobs || [];
  if (jobs.length) {
    kids.push(h('h3', null, 'Slurm jobs (' + jobs.length + ')'));
    kids.push(h('div', { class: 'slurm-jobs' }, jobs.map((j) =>
      h('span', { class: 'badge bg-' + (j.state === 'running' ? 'running' : 'planned'), title: 'run ' + j.run_id + ': ' + j.state },
        h('span', { class: 'mono', text: j.job }), ' ' + j.state + ' ',
        h('a', { href: writeHash(Object.assign({}, S, { view: 'curves', sweep: sweepKey(s), runs: [j.run_id] })), class: 'mono', style: { color: 'inherit' }, text: shortId(j.run_id) })))));
  }
  const probs = s.problems || [];
  kids.push(h('h3', null, probs.length ? 'Problems (' + probs.length + ')' : 'Problems: none'));
  if (probs.length) {
    kids.push(h('div', { class: 'table-wrap problems' }, h('table', { class: 'grid problems-table' },
      h('thead', null, h('tr', null, ['run', 'status', 'step', 'optimizer', 'batch', 'error'].map((c) =>
        h('th', { class: 'nosort' + (c === 'step' || c === 'batch' ? ' num' : ''), text: c })))),
      h('tbody', null, probs.map((p) => h('tr', { class: 'bad' },
        h('td', { class: 'mono' }, h('a', { href: writeHash(Object.assign({}, S, { view: 'curves', sweep: sweepKey(s), runs: [p.run_id] })),
          title: 'curves of ' + p.run_id, text: shortId(p.run_id) })),
        h('td', null, h('span', { class: 'st st-' + p.status, text: p.status })),
        h('td', { class: 'num', text: p.step == null ? '–' : String(p.step) }),
        h('td', { text: p.optimizer || '–' }),
        h('td', { class: 'num', text: fmtBatch(p.global_batch) }),
        h('td', { class: 'err', text: p.error || '' })))))));
  }
  return h('div', { class: 'sweep-card' + (current ? ' current' : '') }, kids);
}

// ---------------------------------------------------------------------------------------- runs
let runsMeta = { columns: [], config_keys: [], rows: [] };

views.runs = async function (ctx) {
  const d = await api('runs', {
    sweep: sweepParam(), keys: S.keys.filter((k) => k.includes('.')).join(','),
    filter: S.filter, sort: S.sort, order: S.sort ? (S.order || 'asc') : null,
  });
  if (ctx.stale()) return;
  await sweepRuns();   // for the colors
  if (ctx.stale()) return;
  runsMeta = d;
  const rows = (d.rows || []).filter(inSweep);
  const columns = d.columns || [];
  const cfg = d.config_keys || [];
  const shown = DEFAULT_COLS.filter((c) => columns.includes(c)).concat(S.keys.filter((k) => !DEFAULT_COLS.includes(k)));

  fillSelect($('#filter-key'), columns.concat(cfg).map((k) => [k, COL_LABEL[k] && !k.includes('.') ? k + ' (' + COL_LABEL[k] + ')' : k]));
  fillSelect($('#column-add'), [['', 'add column…']].concat(
    columns.filter((c) => !shown.includes(c)).map((c) => [c, c]),
    cfg.filter((c) => !shown.includes(c)).map((c) => [c, c])));
  $('#filter-chips').replaceChildren(...S.filter.map((f, i) => h('span', { class: 'chip' }, f.replace(/:(eq|ne|lt|le|gt|ge|contains):/,
    (m, op) => ' ' + ({ eq: '=', ne: '≠', lt: '<', le: '≤', gt: '>', ge: '≥', contains: '∋' }[op]) + ' '),
  h('button', { type: 'button', title: 'remove this filter', text: '×', onclick: () => setState({ filter: S.filter.filter((_, j) => j !== i) }) }))));

  const sel = new Set(S.runs);
  const thead = $('#runs-table thead');
  const allBox = h('input', { type: 'checkbox', title: 'select all shown runs', onchange: (e) => {
    const ids = rows.map((r) => r.run_id);
    const next = e.target.checked ? Array.from(new Set(S.runs.concat(ids))) : S.runs.filter((id) => !ids.includes(id));
    setState({ runs: next }, true);
    markSelection();
  } });
  allBox.checked = rows.length > 0 && rows.every((r) => sel.has(r.run_id));
  thead.replaceChildren(h('tr', null, h('th', { class: 'nosort' }, allBox), shown.map((c) => {
    const numeric = rows.some((r) => typeof r[c] === 'number') || c === 'last_step';
    const th = h('th', { class: numeric ? 'num' : '', title: c + ' (click to sort)' }, COL_LABEL[c] || c);
    if (S.sort === c) th.append(h('span', { class: 'arrow', text: S.order === 'desc' ? ' ▼' : ' ▲' }));
    if (!DEFAULT_COLS.includes(c)) {
      th.append(h('span', { class: 'rm', title: 'remove column', text: '×', onclick: (e) => {
        e.stopPropagation(); setState({ keys: S.keys.filter((k) => k !== c) });
      } }));
    }
    th.addEventListener('click', () => {
      if (S.sort === c) setState({ order: S.order === 'desc' ? 'asc' : 'desc' });
      else setState({ sort: c, order: /^final_|_acc$|train_s/.test(c) ? 'desc' : 'asc' });
    });
    return th;
  })));

  const tbody = $('#runs-table tbody');
  tbody.replaceChildren(...rows.map((r) => {
    const box = h('input', { type: 'checkbox', class: 'sel', onchange: (e) => toggleRun(r.run_id, e.target.checked) });
    box.checked = sel.has(r.run_id);
    const tr = h('tr', { 'data-run': r.run_id, class: (sel.has(r.run_id) ? 'selected' : '') + (r.status === 'failed' || r.status === 'diverged' ? ' bad' : '') },
      h('td', null, box), shown.map((c) => cell(c, r)));
    tr.addEventListener('click', (e) => {
      if (e.target.closest('input,a,button')) return;
      box.checked = !box.checked;
      toggleRun(r.run_id, box.checked);
    });
    return tr;
  }));
  message('runs-empty', rows.length ? '' : (d.total ? 'No run matches the filters.' : 'No runs in this sweep yet.'));
  const total = noSweep && ctx.sweep ? ctx.sweep.runs : d.total;
  $('#runs-count').textContent = rows.length + ' of ' + (total == null ? rows.length : total) + ' runs';
  markSelection();
};

function fillSelect(sel, opts) {
  const keep = sel.value;
  sel.replaceChildren(...opts.map(([v, t]) => h('option', { value: v, text: t })));
  if (opts.some(([v]) => v === keep)) sel.value = keep;
}

function cell(c, r) {
  const v = r[c];
  const td = (cls, text, title) => h('td', { class: cls, text, title });
  switch (c) {
    case 'status': return h('td', null, h('span', { class: 'st st-' + v, text: v || '–' }));
    case 'run_id': return h('td', { class: 'mono', title: v }, h('span', { class: 'swatch', style: { background: runColor(v) } }), shortId(v));
    case 'global_batch': case 'micro_batch': return td('num', fmtBatch(v), String(v));
    case 'last_step': return td('num', (v == null ? '–' : v) + ' / ' + (r.total_steps == null ? '?' : r.total_steps));
    case 'train_s': return td('num', fmtDur(v), isNum(v) ? v.toFixed(1) + ' s' : '');
    case 'error': return h('td', { class: 'err', title: v || '', text: v ? String(v).slice(0, 120) : '' });
    case 'started_at': case 'finished_at': return td('', fmtTime(v));
    default:
      if (/_acc$/.test(c)) return td('num', fmtPct(v, /gap/.test(c)), isNum(v) ? String(v) : '');
      if (typeof v === 'number') return td('num', fmtNum(v, 4), String(v));
      if (typeof v === 'boolean') return td('', String(v));
      if (c.includes('.') && typeof v === 'string' && /^-?\d+(\.\d+)?(e[-+]?\d+)?$/i.test(v)) return td('num', fmtNum(Number(v), 4), v);
      return td('', v == null ? '–' : String(v));
  }
}

function toggleRun(id, on) {
  const next = S.runs.filter((x) => x !== id);
  if (on) next.push(id);
  setState({ runs: next }, true);
  markSelection();
}

function markSelection() {
  const sel = new Set(S.runs);
  for (const tr of document.querySelectorAll('#runs-table tbody tr')) tr.classList.toggle('selected', sel.has(tr.dataset.run));
  const n = S.runs.length;
  $('#plot-selected').textContent = n ? 'plot selected (' + n + ')' : 'plot selected';
  for (const id of ['#plot-selected', '#lr-selected', '#noise-selected', '#clear-selection']) $(id).disabled = !n;
}

function addFilter() {
  const k = $('#filter-key').value;
  const v = $('#filter-value').value.trim();
  if (!k || v === '') { $('#filter-value').focus(); return; }
  $('#filter-value').value = '';
  setState({ filter: S.filter.concat([k + ':' + $('#filter-op').value + ':' + v]) });
}

// ---------------------------------------------------------------------------------------- line charts (dygraphs)
// Drawn by dygraphs (Debian's libjs-dygraphs, embedded as /assets/dygraph.min.js); the legend, the
// base-2 ticks of a log x axis and the x-only drag zoom are written here.
const charts = {};   // key -> {g, sig, el, plot, legend, clean, o, height}

function chartWidth(el) { return Math.max(320, Math.floor(el.clientWidth || el.parentNode.clientWidth || 800)); }

// The series' points on one x grid, as dygraphs takes them: rows [x, y0, y1, ...] sorted by x.
// null where a series has no point at that x (another series has one): bridged, since the charts set
// connectSeparatedPoints; NaN where the series' own value is missing: a gap in its line, unless the
// series spans its gaps.
function joinSeries(clean, spans) {
  const all = [];
  for (const c of clean) for (const x of c.xs) all.push(x);
  all.sort((a, b) => a - b);
  const grid = [];
  for (const x of all) if (!grid.length || grid[grid.length - 1] !== x) grid.push(x);
  const at = new Map(grid.map((x, i) => [x, i]));
  const rows = grid.map((x) => { const r = new Array(clean.length + 1).fill(null); r[0] = x; return r; });
  clean.forEach((c, k) => {
    for (let i = 0; i < c.xs.length; i++) {
      const y = c.ys[i];
      rows[at.get(c.xs[i])][k + 1] = y == null ? (spans[k] ? null : NaN) : y;
    }
  });
  return rows;
}

// Ticks of a log x axis at powers of 2 (batch sizes), every octave a grid line, labels spaced out to
// pixelsPerLabel; zoomed in below two octaves, dygraphs' own numeric ticks.
function log2Ticks(a, b, pixels, opts, g, vals) {
  const lo = Math.ceil(Math.log2(a) - 1e-9), hi = Math.floor(Math.log2(b) + 1e-9);
  if (vals || !(a > 0) || hi - lo < 1) return Dygraph.numericTicks(a, b, pixels, opts, g, vals);
  const perOctave = pixels / Math.max(1e-9, Math.log2(b) - Math.log2(a));
  const every = Math.max(1, Math.ceil(opts('pixelsPerLabel') / perOctave));
  const fmt = opts('axisLabelFormatter');
  const ticks = [];
  for (let k = lo; k <= hi; k++) ticks.push({ v: Math.pow(2, k), label: k % every ? '' : fmt.call(g, Math.pow(2, k), 0, opts, g) });
  return ticks;
}

// dygraphs' numeric ticks, labeled as percentages with as many decimals as their spacing needs
function pctTicks(a, b, pixels, opts, g, vals) {
  const ticks = Dygraph.numericTicks(a, b, pixels, opts, g, vals);
  const vs = ticks.filter((t) => t.label !== '').map((t) => t.v);
  let incr = Infinity;
  for (let i = 1; i < vs.length; i++) incr = Math.min(incr, Math.abs(vs[i] - vs[i - 1]));
  if (!(incr > 0 && isFinite(incr))) incr = 0.01;
  const dec = Math.max(0, Math.min(4, Math.ceil(-Math.log10(incr * 100) - 1e-9)));
  for (const t of ticks) if (t.label !== '') t.label = (t.v * 100).toFixed(dec) + '%';
  return ticks;
}

// Drag zooms the x axis only (dygraphs' default zooms y too on a vertical drag); shift- or alt-drag
// pans; a double click zooms back out.
const X_ZOOM = {
  mousedown(event, g, context) {
    if (event.button && event.button === 2) return;
    context.initializeMouseDown(event, g, context);
    if (event.altKey || event.shiftKey) Dygraph.startPan(event, g, context);
    else Dygraph.startZoom(event, g, context);
    const move = (e) => {
      // the zoom rectangle follows x only: moveZoom sees the pointer at the height the drag started
      if (context.isZooming) Dygraph.moveZoom({ pageX: e.pageX, pageY: context.py + context.dragStartY }, g, context);
      else if (context.isPanning) Dygraph.movePan(e, g, context);
    };
    const up = (e) => {
      if (context.isZooming && context.dragEndX != null) Dygraph.endZoom(e, g, context);
      else Dygraph.endPan(e, g, context);   // a click, or the end of a pan
      document.removeEventListener('mousemove', move);
      document.removeEventListener('mouseup', up);
      context.destroy();
    };
    document.addEventListener('mousemove', move);
    document.addEventListener('mouseup', up);
  },
  willDestroyContextMyself: true,
  dblclick: (event, g, context) => Dygraph.defaultInteractionModel.dblclick(event, g, context),
};

// the index in sorted xs of the point nearest to x
function nearest(xs, x) {
  let lo = 0, hi = xs.length - 1;
  while (hi - lo > 1) { const m = (lo + hi) >> 1; if (xs[m] <= x) lo = m; else hi = m; }
  return Math.abs(xs[hi] - x) < Math.abs(xs[lo] - x) ? hi : lo;
}

// The live legend under a chart: the hovered x and each series' value there (its point nearest to
// that x, '–' outside its x range); a click on a series hides or shows it.
function buildLegend(c) {
  const items = c.series.map((s, i) => {
    const sw = h('span', { class: 'legend-swatch' + (s.points && !s.line ? ' pts' : '') + (s.dash ? ' dash' : '') });
    if (s.points && !s.line) sw.style.background = s.color;
    else if (s.dash) sw.style.borderTopColor = s.color;
    else sw.style.background = s.color;
    const v = h('span', { class: 'legend-value', text: '–' });
    const item = h('span', { class: 'legend-item', title: 'click to hide or show' }, sw, h('span', { class: 'legend-label', text: s.label }), v);
    item.addEventListener('click', () => {
      const on = item.classList.toggle('off');
      c.g.setVisibility(i, !on);
    });
    return { item, v };
  });
  const xv = h('span', { class: 'legend-value', text: '–' });
  c.legend.replaceChildren(h('span', { class: 'legend-x' }, h('span', { class: 'legend-label', text: c.o.xLabel }), xv), ...items.map((it) => it.item));
  c.legendX = xv;
  c.legendItems = items;
}

function showLegend(c, x) {
  const has = isNum(x);
  c.legendX.textContent = has ? c.fx(x) : '–';
  c.clean.forEach((s, i) => {
    let text = '–';
    if (has && s.xs.length && x >= s.xs[0] && x <= s.xs[s.xs.length - 1]) {
      const y = s.ys[nearest(s.xs, x)];
      if (y != null) text = c.fy(y);
    }
    c.legendItems[i].v.textContent = text;
  });
}

// series: [{id, label, color, x:[], y:[], points?, line?, dash?, width?, spanGaps?}];
// o: {xKind, yKind, xLabel, yLabel, logx, logy, height}. A refresh of the same chart keeps its zoom.
function lineChart(key, el, series, o, refresh) {
  const clean = series.map((s) => {
    const pts = [];
    for (let i = 0; i < s.x.length; i++) {
      const x = s.x[i];
      if (!isNum(x) || (o.logx && x <= 0)) continue;
      let y = s.y[i];
      if (!isNum(y) || (o.logy && y <= 0)) y = null;
      pts.push([x, y]);
    }
    for (let i = 1; i < pts.length; i++) if (pts[i][0] < pts[i - 1][0]) { pts.sort((a, b) => a[0] - b[0]); break; }
    return { xs: pts.map((p) => p[0]), ys: pts.map((p) => p[1]) };
  });
  // nothing to draw (on a log y axis: no value above 0) is a message: dygraphs would log an error
  const hasValues = clean.some((c) => c.ys.some((y) => y != null));
  const rows = hasValues ? joinSeries(clean, series.map((s) => !!s.spanGaps)) : [];
  if (rows.length && o.logx) {
    // points on a log x axis: a little room beyond the first and last (rows with no values)
    const pad = (x) => { const r = new Array(series.length + 1).fill(null); r[0] = x; return r; };
    rows.unshift(pad(rows[0][0] / 1.25));
    rows.push(pad(rows[rows.length - 1][0] * 1.25));
  }
  const sig = JSON.stringify([series.map((s) => s.id + '|' + s.label), o.xLabel, o.yLabel, !!o.logx, !!o.logy, o.yKind]);
  const old = charts[key];
  if (old && old.sig === sig && old.el === el && refresh && rows.length) {
    // new data, same chart: dygraphs keeps a zoomed x window (and hidden series) across the update
    old.clean = clean;
    old.g.updateOptions({ file: rows });
    return old.g;
  }
  // other series on the same axes (a run joined the plotted ones): the new chart keeps the x zoom
  const keepX = old && old.el === el && refresh && !!old.o.logx === !!o.logx && old.o.xLabel === o.xLabel &&
    old.g.isZoomed('x') ? old.g.xAxisRange() : null;
  dropChart(key);
  el.replaceChildren();
  if (!rows.length) {
    el.append(h('div', { class: 'message', text: o.logy ? 'No value above 0 to plot on the log scale.' : 'No values to plot.' }));
    return null;
  }
  const fy = o.yKind === 'pct' ? (v) => fmtPct(v) : (v) => (v == null ? '–' : fmtNum(v, 4));
  const fx = o.xKind === 'batch' ? (v) => fmtBatch(v) : (v) => (v == null ? '–' : fmtNum(v, 4));
  const axisFmt = (kind) => (v) => (kind === 'pct' ? fmtPct(v) : kind === 'batch' ? fmtBatch(v) : fmtNum(v));
  const plot = h('div', { class: 'chart-plot' });
  const legend = h('div', { class: 'chart-legend' });
  el.append(plot, legend);
  const height = o.height || 420;
  const c = { sig, el, plot, legend, clean, series, o, height, fx, fy };
  const names = series.map((s, i) => 's' + i);   // dygraphs keys series by label: ours may repeat
  const perSeries = {};
  series.forEach((s, i) => {
    const pointsOnly = s.points && !s.line;
    perSeries[names[i]] = {
      color: s.color,
      strokeWidth: pointsOnly ? 0 : (s.width || 1.5),
      strokePattern: s.dash || null,
      drawPoints: !!s.points,
      pointSize: s.points ? 3.5 : 2,   // a line's isolated points (between gaps) are drawn too
      highlightCircleSize: s.points ? 5 : 3,
    };
  });
  const xAxis = { logscale: !!o.logx, axisLabelFormatter: axisFmt(o.xKind), pixelsPerLabel: 70 };
  if (o.logx) xAxis.ticker = log2Ticks;
  const yAxis = { logscale: !!o.logy, axisLabelFormatter: axisFmt(o.yKind), axisLabelWidth: 58, pixelsPerLabel: 28 };
  if (o.yKind === 'pct' && !o.logy) yAxis.ticker = pctTicks;
  c.g = new Dygraph(plot, rows, {
    labels: ['x'].concat(names),
    series: perSeries,
    width: chartWidth(el),
    height,
    xlabel: o.xLabel,
    ylabel: o.yLabel,
    xLabelHeight: 16,
    yLabelWidth: 16,
    axes: { x: xAxis, y: yAxis },
    axisLabelFontSize: 11,
    axisLineColor: '#8c959f',
    gridLineColor: '#eaeef2',
    connectSeparatedPoints: true,
    legend: 'never',
    showLabelsOnHighlight: false,
    interactionModel: X_ZOOM,
    dateWindow: keepX,
    highlightCallback: (e, x) => showLegend(c, x),
    unhighlightCallback: () => showLegend(c, null),
  });
  buildLegend(c);
  charts[key] = c;
  return c.g;
}

function dropChart(key) { if (charts[key]) { charts[key].g.destroy(); delete charts[key]; } }

window.addEventListener('resize', debounce(() => {
  for (const c of Object.values(charts)) if (c.el.offsetParent) c.g.resize(chartWidth(c.el), c.height);
  if (S.view === 'layers' && heat) drawHeatmap(heat.d);
}, 150));

async function curvesView(key, ctx, y, x, logy, noteId, msgId) {
  const pr = await plotRuns();
  if (ctx.stale()) return;
  const el = $('#' + key + '-chart');
  $('#' + noteId).textContent = pr.note;
  if (!pr.ids.length) { dropChart(key); el.replaceChildren(); message(msgId, 'No runs to plot.'); return; }
  const d = await api('curves', { runs: pr.ids.join(','), y, x, points: 1000 });
  if (ctx.stale()) return;
  const series = (d.series || []).map((s) => ({ id: s.run_id, label: s.label || shortId(s.run_id), color: runColor(s.run_id), x: s.x || [], y: s.y || [] }));
  const n = series.reduce((a, s) => a + s.y.filter(isNum).length, 0);
  if (!n) {
    dropChart(key); el.replaceChildren();
    message(msgId, 'No ' + y + ' values for these runs' + (d.source ? ' (the ' + d.source + ' table has none)' : '') + '.');
    return;
  }
  message(msgId, '');
  lineChart(key, el, series, {
    xLabel: AXES[x] || x, yLabel: y, xKind: 'num', yKind: isAccMetric(y) ? 'pct' : 'num', logy, height: 460,
  }, ctx.refresh);
  return true;
}

// ---------------------------------------------------------------------------------------- curves, LR, noise
views.curves = async function (ctx) {
  const x = AXES[S.x] ? S.x : 'step';
  $('#curves-x').value = x; $('#curves-logy').checked = S.logy === '1';
  // no y in the URL: the first of these the runs have (a sweep without a validation split has no val_acc)
  const ys = METRICS.includes(S.y) ? [S.y] : ['val_acc', 'test_acc', 'train_loss'];
  for (let i = 0; i < ys.length; i++) {
    $('#curves-y').value = ys[i];
    const drawn = await curvesView('curves', ctx, ys[i], x, S.logy === '1', 'curves-note', 'curves-msg');
    if (drawn || ctx.stale()) return;
  }
};

views.lr = async function (ctx) {
  const x = AXES[S.lx] ? S.lx : 'step';
  $('#lr-x').value = x; $('#lr-logy').checked = S.llogy === '1';
  await curvesView('lr', ctx, 'lr', x, S.llogy === '1', 'lr-note', 'lr-msg');
};

views.noise = async function (ctx) {
  const pr = await plotRuns();
  if (ctx.stale()) return;
  $('#noise-note').textContent = pr.note;
  const el = $('#noise-chart');
  if (!pr.ids.length) { dropChart('noise'); el.replaceChildren(); message('noise-msg', 'No runs to plot.'); return; }
  const d = await api('noise', { runs: pr.ids.join(','), points: 1000 });
  if (ctx.stale()) return;
  const series = (d.series || []).map((s) => ({ id: s.run_id, label: s.label || shortId(s.run_id), color: runColor(s.run_id), x: s.step || [], y: s.b_simple || [] }));
  if (!series.some((s) => s.y.some((v) => isNum(v) && v > 0))) {
    dropChart('noise'); el.replaceChildren();
    message('noise-msg', 'These runs recorded no noise scale (set train.noise_scale = true).');
    return;
  }
  message('noise-msg', '');
  lineChart('noise', el, series, { xLabel: 'step', yLabel: 'B_simple', xKind: 'num', yKind: 'num', logy: true, height: 460 }, ctx.refresh);
};

// ---------------------------------------------------------------------------------------- scaling
const mean = (s) => (s && isNum(s.mean) ? s.mean : null);

views.scaling = async function (ctx) {
  const [rep, study] = await Promise.all([
    api('report', { sweep: sweepParam(), group_by: 'optimizer,global_batch' }),
    api('study', { sweep: sweepParam() }),
  ]);
  if (ctx.stale()) return;
  const groups = [];   // {opt, B, acc, gap, steps, runs}
  let note = '';
  if (Array.isArray(rep.rows)) {
    for (const r of rep.rows) {
      const k = r.key || {};
      const B = Number(k.global_batch);
      if (!k.optimizer || !isFinite(B)) continue;
      const t = (r.targets || [])[0];
      groups.push({ opt: k.optimizer, B, acc: mean(r.final), gap: mean(r.gap_acc), steps: t && t.reached ? mean(t.steps) : null, runs: r.runs, statuses: r.statuses });
    }
    note = 'Report groups (optimizer × global batch): final ' + (rep.metric || 'test_acc') + ' of the best LR per group (selected on ' + (rep.select_by || 'val') + ').';
  } else {
    // a study report: take each (optimizer, batch)'s best run by validation accuracy from the runs table
    const runs = await sweepRuns();
    if (ctx.stale()) return;
    const best = new Map();
    for (const r of runs) {
      if (!r.optimizer || !isNum(r.global_batch) || !isNum(r.final_test_acc)) continue;
      const key = r.optimizer + '|' + r.global_batch;
      const score = isNum(r.final_val_acc) ? r.final_val_acc : r.final_test_acc;
      const b = best.get(key);
      if (!b || score > b.score) best.set(key, { score, r });
    }
    for (const { r } of best.values()) groups.push({ opt: r.optimizer, B: r.global_batch, acc: r.final_test_acc, gap: r.final_gap_acc, steps: null, runs: 1 });
    note = 'Accuracy and gap: each (optimizer, batch)\'s run with the best final validation accuracy.';
  }
  const opts = Array.from(new Set(groups.map((g) => g.opt))).sort();
  for (const o of opts) groupColor(o);
  const byOpt = (field) => opts.map((o) => {
    const gs = groups.filter((g) => g.opt === o).sort((a, b) => a.B - b.B);
    return { id: o, label: o, color: groupColor(o), x: gs.map((g) => g.B), y: gs.map((g) => g[field]), points: true, line: true, spanGaps: true };
  });
  const hasAcc = groups.some((g) => isNum(g.acc));
  message('scaling-msg', groups.length ? '' : 'No finished groups to plot yet (the report has no rows with optimizer and global_batch).');
  if (hasAcc) lineChart('scal-acc', $('#scaling-acc'), byOpt('acc'), { xLabel: 'global batch', yLabel: 'final test acc', xKind: 'batch', yKind: 'pct', logx: true, height: 300 }, ctx.refresh);
  else { dropChart('scal-acc'); $('#scaling-acc').replaceChildren(h('div', { class: 'message', text: 'no test accuracy yet' })); }
  if (groups.some((g) => isNum(g.gap))) lineChart('scal-gap', $('#scaling-gap'), byOpt('gap'), { xLabel: 'global batch', yLabel: 'train acc − test acc', xKind: 'batch', yKind: 'pct', logx: true, height: 300 }, ctx.refresh);
  else { dropChart('scal-gap'); $('#scaling-gap').replaceChildren(h('div', { class: 'message', text: 'no generalization gap yet' })); }

  // steps to target
  const st = study && study.present ? study.study || {} : null;
  const stepsSeries = [];
  let title = 'Steps to target vs global batch (log-log)';
  if (st && Array.isArray(st.cells)) {
    const cells = st.cells.filter((c) => isNum(c.global_batch));
    const names = Array.from(new Set(cells.map((c) => c.series || c.optimizer))).sort();
    const Bs = cells.map((c) => c.global_batch);
    const lo = Math.min(...Bs) / 1.4, hi = Math.max(...Bs) * 1.4;
    for (const n of names) {
      const color = groupColor(n);
      const mine = cells.filter((c) => (c.series || c.optimizer) === n && isNum(c.steps_to_target));
      const seeds = Array.from(new Set(mine.map((c) => c.seed))).sort((a, b) => a - b);
      seeds.forEach((sd) => {
        const cs = mine.filter((c) => c.seed === sd).sort((a, b) => a.global_batch - b.global_batch);
        stepsSeries.push({ id: n + '#' + sd, label: n + (seeds.length > 1 ? ' seed ' + sd : ''), color, points: true,
          x: cs.map((c) => c.global_batch), y: cs.map((c) => c.steps_to_target) });
      });
      const fit = (st.fits || []).find((f) => (f.series || f.optimizer) === n);
      const F = fit && fit.fit;
      if (F && isNum(F.s_min) && isNum(F.e_min) && isFinite(lo) && hi > lo) {
        const xs = [], ys = [];
        for (let i = 0; i <= 40; i++) { const B = lo * Math.pow(hi / lo, i / 40); xs.push(B); ys.push(F.s_min + F.e_min / B); }
        stepsSeries.push({ id: n + ' fit', label: n + ' fit: S=' + fmtNum(F.s_min) + ' + ' + fmtNum(F.e_min) + '/B, B_crit=' + fmtNum(F.b_crit),
          color, dash: [6, 4], width: 1.5, x: xs, y: ys });
      }
    }
    const t = cells[0];
    title = 'Steps to ' + (t ? t.target_metric + ' ≥ ' + fmtMetric(t.target_metric, t.target_value) : 'target') + ' vs global batch: study cells and S(B) = S_min + E_min/B';
  } else {
    const tg = (rep.targets || [])[0];
    for (const s of byOpt('steps')) if (s.y.some(isNum)) stepsSeries.push(s);
    if (tg) title = 'Steps to ' + tg.metric + ' ≥ ' + fmtMetric(tg.metric, tg.value) + ' vs global batch (log-log)';
  }
  $('#scaling-steps-title').textContent = title;
  if (stepsSeries.some((s) => s.y.some(isNum))) {
    lineChart('scal-steps', $('#scaling-steps'), stepsSeries, { xLabel: 'global batch', yLabel: 'steps to target', xKind: 'batch', yKind: 'num', logx: true, logy: true, height: 300 }, ctx.refresh);
  } else {
    dropChart('scal-steps');
    $('#scaling-steps').replaceChildren(h('div', { class: 'message', text: 'No run reached a target yet (targets come from train.target or the study).' }));
  }
  $('#scaling-note').textContent = note + (st ? ' Steps to target: the study\'s cells (best LR per cell) and per-optimizer fits.' : '');
  const fits = st && Array.isArray(st.fits) && st.fits.length ? st.fits : null;
  $('#scaling-table-title').textContent = fits ? 'Study fits: S(B) = S_min + E_min/B, B_crit = E_min/S_min' : 'Groups of the report';
  $('#scaling-table').replaceChildren(fits ? fitsTable(fits) : groupsTable(groups));
};

function pm(v, se) { return fmtNum(v) + (isNum(se) ? ' ± ' + fmtNum(se, 2) : ''); }

function fitsTable(fits) {
  return h('div', { class: 'table-wrap' }, h('table', { class: 'grid' },
    h('thead', null, h('tr', null, ['series', 'S_min', 'E_min', 'B_crit', 'B_simple', 'points'].map((c) => h('th', { class: 'nosort' + (c === 'series' ? '' : ' num'), text: c })))),
    h('tbody', null, fits.map((f) => {
      const F = f.fit || {};
      const n = f.series || f.optimizer;
      return h('tr', null, h('td', null, h('span', { class: 'swatch', style: { background: groupColor(n) } }), n),
        h('td', { class: 'num', text: pm(F.s_min, F.s_min_se) }), h('td', { class: 'num', text: pm(F.e_min, F.e_min_se) }),
        h('td', { class: 'num', text: pm(F.b_crit, F.b_crit_se) }), h('td', { class: 'num', text: fmtNum(f.b_simple) }),
        h('td', { class: 'num', text: F.points == null ? '–' : String(F.points) }));
    }))));
}

function groupsTable(groups) {
  const gs = groups.slice().sort((a, b) => cmp(a.opt, b.opt) || a.B - b.B);
  return h('div', { class: 'table-wrap' }, h('table', { class: 'grid' },
    h('thead', null, h('tr', null, ['optimizer', 'batch', 'runs', 'test acc', 'gap acc', 'steps to target'].map((c, i) => h('th', { class: 'nosort' + (i ? ' num' : ''), text: c })))),
    h('tbody', null, gs.map((g) => h('tr', null,
      h('td', null, h('span', { class: 'swatch', style: { background: groupColor(g.opt) } }), g.opt),
      h('td', { class: 'num', text: fmtBatch(g.B) }), h('td', { class: 'num', text: g.runs == null ? '–' : String(g.runs) }),
      h('td', { class: 'num', text: fmtPct(g.acc) }), h('td', { class: 'num', text: fmtPct(g.gap, true) }),
      h('td', { class: 'num', text: isNum(g.steps) ? fmtNum(Math.round(g.steps)) : 'not reached' }))))));
}

// ---------------------------------------------------------------------------------------- layers heatmap
let heat = null;   // {d, layout}
const COLOR_LUT = (() => {
  const lut = [];
  const rgb = VIRIDIS.map((c) => [1, 3, 5].map((i) => parseInt(c.slice(i, i + 2), 16)));
  for (let i = 0; i < 256; i++) {
    const t = i / 255 * (rgb.length - 1), k = Math.min(rgb.length - 2, Math.floor(t)), f = t - k;
    const c = rgb[k].map((a, j) => Math.round(a + (rgb[k + 1][j] - a) * f));
    lut.push('rgb(' + c.join(',') + ')');
  }
  return lut;
})();
const MISSING = '#d0d7de';

views.layers = async function (ctx) {
  const runs = await sweepRuns();
  if (ctx.stale()) return;
  const metric = ['ratio', 'trust_ratio', 'weight_norm', 'grad_norm', 'update_norm'].includes(S.metric) ? S.metric : 'ratio';
  $('#layers-metric').value = metric;
  let run = S.run;
  if (!run) {
    // The selected runs first, then the sweep's; the first that recorded layer statistics.
    const withStats = runs.filter((r) => r.has_layer_stats);
    const picked = withStats.find((r) => S.runs.includes(r.run_id)) || withStats[0];
    run = picked ? picked.run_id : null;
  }
  const known = runs.some((r) => r.run_id === run);
  fillSelect($('#layers-run'), (run && !known ? [[run, shortId(run)]] : []).concat(
    runs.map((r) => [r.run_id, runLabel(r) + ' · ' + shortId(r.run_id) + ' · ' + r.status])));
  if (run) $('#layers-run').value = run;
  if (!run) {
    clearHeatmap();
    message('layers-msg', runs.length ? 'No run of this sweep recorded layer statistics (set train.layer_stats_every > 0).' : 'No runs yet.');
    return;
  }
  // At most 2 columns a pixel and 400 in all (a 160-layer model: 64k cells, ~200 KB gzipped).
  const width = Math.max(480, $('#heatmap-wrap').clientWidth) - 200;
  const steps = Math.max(10, Math.min(400, width * 2));
  const d = await api('layers', { run, metric, steps });
  if (ctx.stale()) return;
  if (!d.layers || !d.layers.length || !d.steps || !d.steps.length) {
    clearHeatmap();
    message('layers-msg', 'Run ' + shortId(run) + ' recorded no layer statistics (train.layer_stats_every = 0). Pick another run.');
    return;
  }
  message('layers-msg', '');
  drawHeatmap(d);
};

function clearHeatmap() {
  heat = null;
  const cv = $('#heatmap');
  cv.width = 0; cv.height = 0; cv.style.width = '0px'; cv.style.height = '0px';
  $('#layers-legend').hidden = true;
  $('#heatmap-tip').hidden = true;
}

function drawHeatmap(d) {
  const cv = $('#heatmap');
  const wrap = $('#heatmap-wrap');
  const W = Math.max(480, wrap.clientWidth);
  const ctx2 = cv.getContext('2d');
  const font = '11px system-ui, -apple-system, "Segoe UI", Roboto, Arial, sans-serif';
  ctx2.font = font;
  const nL = d.layers.length, nS = d.steps.length;
  let labelW = 0;
  for (const l of d.layers) labelW = Math.max(labelW, ctx2.measureText(l).width);
  labelW = Math.min(Math.ceil(labelW) + 12, Math.floor(W * 0.4));
  const rowH = Math.max(4, Math.min(18, Math.floor(620 / nL)));
  const top = 6, bottom = 34, left = labelW, right = 12;
  const plotW = W - left - right, plotH = nL * rowH;
  const H = top + plotH + bottom;
  const dpr = window.devicePixelRatio || 1;
  cv.width = Math.round(W * dpr); cv.height = Math.round(H * dpr);
  cv.style.width = W + 'px'; cv.style.height = H + 'px';
  ctx2.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx2.font = font;   // resizing the canvas reset the context
  ctx2.fillStyle = '#fff'; ctx2.fillRect(0, 0, W, H);

  let lo = Infinity, hi = -Infinity;
  for (const row of d.values) for (const v of row) if (isNum(v) && v > 0) { if (v < lo) lo = v; if (v > hi) hi = v; }
  const hasRange = isFinite(lo);
  const llo = hasRange ? Math.log10(lo) : 0, lhi = hasRange ? Math.log10(hi) : 1;
  const span = lhi - llo || 1;
  const colX = (j) => left + Math.round(j * plotW / nS);
  for (let i = 0; i < nL; i++) {
    const row = d.values[i] || [];
    const y0 = top + i * rowH, hh = rowH > 6 ? rowH - 1 : rowH;
    for (let j = 0; j < nS; j++) {
      const v = row[j];
      ctx2.fillStyle = isNum(v) && v > 0 ? COLOR_LUT[Math.max(0, Math.min(255, Math.round((Math.log10(v) - llo) / span * 255)))] : MISSING;
      const x0 = colX(j);
      ctx2.fillRect(x0, y0, Math.max(1, colX(j + 1) - x0), hh);
    }
  }
  // layer names, thinned when rows are too thin for 11 px text
  ctx2.fillStyle = '#1f2328'; ctx2.textAlign = 'right'; ctx2.textBaseline = 'middle';
  const every = Math.max(1, Math.ceil(12 / rowH));
  for (let i = 0; i < nL; i += every) {
    let name = d.layers[i];
    while (name.length > 4 && ctx2.measureText(name).width > labelW - 10) name = '…' + name.slice(2);
    ctx2.fillText(name, left - 6, top + i * rowH + rowH / 2);
  }
  // step ticks at round step values, placed between the columns that hold them
  ctx2.textAlign = 'center'; ctx2.textBaseline = 'top'; ctx2.strokeStyle = '#8c959f';
  const steps = d.steps, s0 = steps[0], s1 = steps[nS - 1];
  const cx = (j) => (colX(j) + colX(j + 1)) / 2;
  const stepX = (v) => {
    let j = 0;
    while (j < nS - 2 && steps[j + 1] < v) j++;
    if (nS < 2 || steps[j + 1] === steps[j]) return cx(j);
    return cx(j) + (cx(j + 1) - cx(j)) * (v - steps[j]) / (steps[j + 1] - steps[j]);
  };
  const raw = (s1 - s0) / Math.max(2, Math.min(10, Math.floor(plotW / 90)));
  const mag = Math.pow(10, Math.floor(Math.log10(raw || 1)));
  const inc = [1, 2, 5, 10].map((m) => m * mag).find((m) => m >= raw) || raw || 1;
  const ticks = nS < 2 ? [s0] : [];
  for (let v = Math.ceil(s0 / inc) * inc; v <= s1 && ticks.length < 30; v += inc) ticks.push(v);
  for (const v of ticks) {
    const x = stepX(v);
    ctx2.beginPath(); ctx2.moveTo(x, top + plotH); ctx2.lineTo(x, top + plotH + 4); ctx2.stroke();
    ctx2.fillText(fmtNum(v), x, top + plotH + 6);
  }
  ctx2.fillStyle = '#656d76';
  ctx2.fillText('step', left + plotW / 2, top + plotH + 20);

  heat = { d, left, top, rowH, plotW, plotH, nS, nL, colX };
  $('#layers-legend').hidden = !hasRange;
  if (hasRange) {
    $('#layers-min').textContent = d.metric + ' ' + fmtNum(lo);
    $('#layers-max').textContent = fmtNum(hi);
    $('#layers-gradient').style.background = 'linear-gradient(90deg,' + VIRIDIS.join(',') + ')';
  }
}

function heatHover(e) {
  const tip = $('#heatmap-tip');
  if (!heat) { tip.hidden = true; return; }
  const r = e.target.getBoundingClientRect();
  const mx = e.clientX - r.left, my = e.clientY - r.top;
  const i = Math.floor((my - heat.top) / heat.rowH);
  const j = Math.floor((mx - heat.left) / heat.plotW * heat.nS);
  if (i < 0 || i >= heat.nL || j < 0 || j >= heat.nS || mx < heat.left) { tip.hidden = true; return; }
  const v = (heat.d.values[i] || [])[j];
  tip.textContent = heat.d.layers[i] + ' · step ' + heat.d.steps[j] + ' · ' + heat.d.metric + ' = ' + (isNum(v) ? fmtNum(v, 4) : 'missing');
  tip.hidden = false;
  const tw = tip.offsetWidth;
  tip.style.left = Math.min(mx + 14, r.width - tw - 4) + 'px';
  tip.style.top = (my + 16) + 'px';
}

// ---------------------------------------------------------------------------------------- wiring
function initControls() {
  const fill = (sel, items) => sel.replaceChildren(...items.map(([v, t]) => h('option', { value: v, text: t })));
  fill($('#curves-y'), METRICS.map((m) => [m, m]));
  for (const s of document.querySelectorAll('.x-select')) fill(s, Object.entries(AXES));
  $('#curves-y').addEventListener('change', (e) => setState({ y: e.target.value }));
  $('#curves-x').addEventListener('change', (e) => setState({ x: e.target.value }));
  $('#curves-logy').addEventListener('change', (e) => setState({ logy: e.target.checked ? '1' : '' }));
  $('#lr-x').addEventListener('change', (e) => setState({ lx: e.target.value }));
  $('#lr-logy').addEventListener('change', (e) => setState({ llogy: e.target.checked ? '1' : '' }));
  $('#layers-run').addEventListener('change', (e) => setState({ run: e.target.value }));
  $('#layers-metric').addEventListener('change', (e) => setState({ metric: e.target.value }));
  $('#sweep-select').addEventListener('change', (e) => setState({ sweep: e.target.value, runs: [], run: '', filter: [] }));
  $('#filter-add').addEventListener('click', addFilter);
  $('#filter-value').addEventListener('keydown', (e) => { if (e.key === 'Enter') addFilter(); });
  $('#column-add').addEventListener('change', (e) => {
    const k = e.target.value;
    if (k && !S.keys.includes(k)) setState({ keys: S.keys.concat([k]) });
  });
  $('#plot-selected').addEventListener('click', () => setState({ view: 'curves' }));
  $('#lr-selected').addEventListener('click', () => setState({ view: 'lr' }));
  $('#noise-selected').addEventListener('click', () => setState({ view: 'noise' }));
  $('#clear-selection').addEventListener('click', () => { setState({ runs: [] }, true); render(false); });
  const cv = $('#heatmap');
  cv.addEventListener('mousemove', heatHover);
  cv.addEventListener('mouseleave', () => { $('#heatmap-tip').hidden = true; });
  window.addEventListener('hashchange', () => { S = readHash(); render(false); });
}

function start() {
  if (typeof Dygraph === 'undefined') {
    const b = $('#error-banner');
    b.textContent = 'The charting library (/assets/dygraph.min.js) did not load.';
    b.hidden = false;
  }
  initControls();
  render(false);
  poll();
}

if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start); else start();
})();
