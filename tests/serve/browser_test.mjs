#!/usr/bin/env node
// Headless-browser test of the `batchlab serve` dashboard, run by CTest against a live server:
//   node tests/serve/browser_test.mjs --url http://127.0.0.1:PORT --expect-runs N --out DIR
//        [--live-db PATH]   (the served database: the test writes a run into it, as a sweep would,
//                            and checks that the open page shows it without a reload)
// Drives Debian's chromium through playwright-core (serve/web/node_modules, installed by
// scripts/setup.sh). Exit codes: 0 pass, 1 a check failed, 2 bad arguments, 77 skipped (chromium or
// playwright-core missing; CTest's SKIP_RETURN_CODE).
// Env: BATCHLAB_PLAYWRIGHT (path of playwright-core's index.mjs), BATCHLAB_CHROMIUM (browser binary).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, '..', '..');
const TIMEOUT_MS = 20000;

function usage(msg) {
  console.error('browser_test: ' + msg);
  console.error('usage: node tests/serve/browser_test.mjs --url http://127.0.0.1:PORT --expect-runs N --out DIR');
  process.exit(2);
}

function parseArgs(argv) {
  const a = {};
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i];
    if (!['--url', '--expect-runs', '--out', '--live-db'].includes(k)) usage('unknown argument ' + k);
    if (i + 1 >= argv.length) usage(k + ' needs a value');
    a[k.slice(2)] = argv[++i];
  }
  if (!a.url) usage('--url is required');
  if (a['expect-runs'] == null || !/^\d+$/.test(a['expect-runs'])) usage('--expect-runs N (a count) is required');
  if (!a.out) usage('--out is required');
  return { url: a.url.replace(/\/+$/, ''), expectRuns: Number(a['expect-runs']), out: path.resolve(a.out),
    liveDb: a['live-db'] ? path.resolve(a['live-db']) : null };
}

function skip(why) {
  console.log('SKIP: ' + why + '; install it with: bash scripts/setup.sh');
  process.exit(77);
}

const args = parseArgs(process.argv.slice(2));
const pwPath = process.env.BATCHLAB_PLAYWRIGHT || path.join(repo, 'serve', 'web', 'node_modules', 'playwright-core', 'index.mjs');
const chromiumPath = process.env.BATCHLAB_CHROMIUM || '/usr/bin/chromium';
if (!existsSync(pwPath)) skip('playwright-core not found at ' + pwPath + ' (npm ci in serve/web)');
if (!existsSync(chromiumPath)) skip('chromium not found at ' + chromiumPath + ' (apt-get install chromium, or set BATCHLAB_CHROMIUM)');
let pw;
try {
  pw = await import(pathToFileURL(pwPath).href);
} catch (e) {
  skip('playwright-core at ' + pwPath + ' does not load (' + (e && e.message) + ')');
}
const chromium = pw.chromium || (pw.default && pw.default.chromium);
if (!chromium) skip('playwright-core at ' + pwPath + ' has no chromium launcher');
mkdirSync(args.out, { recursive: true });

const origin = new URL(args.url).origin;
const failures = [];
const consoleErrors = [];
const pageErrors = [];
const foreign = [];
let browser;

function fail(msg) {
  failures.push(msg);
  console.error('FAIL: ' + msg);
}

async function finish() {
  if (browser) await browser.close().catch(() => {});
  if (failures.length) {
    console.error('browser_test: ' + failures.length + ' check(s) failed; screenshots in ' + args.out);
    process.exit(1);
  }
  console.log('browser_test: all checks passed; screenshots in ' + args.out);
  process.exit(0);
}

// a step that fails records its message and the test goes on to the next view
async function step(name, fn) {
  try {
    await fn();
    console.log('ok: ' + name);
  } catch (e) {
    fail(name + ': ' + (e && e.message ? e.message.split('\n')[0] : e));
  }
}

async function shot(page, file) {
  await page.screenshot({ path: path.join(args.out, file), fullPage: true }).catch((e) => fail('screenshot ' + file + ': ' + e.message));
}

async function goView(page, hash) {
  await page.evaluate((h) => { location.hash = h; }, hash);
}

// counts the pixels of a canvas that are strongly colored (lines, cells) as opposed to the white
// background and the gray axes, grid and labels; and the number of distinct quantized colors
async function canvasStats(page, selector) {
  return page.evaluate((sel) => {
    const cv = document.querySelector(sel);
    if (!cv) return { missing: true };
    if (!cv.width || !cv.height) return { width: cv.width, height: cv.height, colored: 0, distinct: 0 };
    const g = cv.getContext('2d');
    const px = g.getImageData(0, 0, cv.width, cv.height).data;
    let colored = 0;
    const colors = new Set();
    for (let i = 0; i < px.length; i += 4) {
      const r = px[i], gg = px[i + 1], b = px[i + 2], a = px[i + 3];
      if (a < 128) continue;
      const sat = Math.max(r, gg, b) - Math.min(r, gg, b);
      if (sat > 60) { colored++; colors.add((r >> 3) << 10 | (gg >> 3) << 5 | (b >> 3)); }
    }
    return { width: cv.width, height: cv.height, colored, distinct: colors.size };
  }, selector);
}

async function waitCanvas(page, selector, okFn, what) {
  const t0 = Date.now();
  let st = null;
  while (Date.now() - t0 < TIMEOUT_MS) {
    st = await canvasStats(page, selector);
    if (!st.missing && okFn(st)) return st;
    await page.waitForTimeout(250);
  }
  const msgs = await page.evaluate(() => Array.from(document.querySelectorAll('.message:not([hidden]), #error-banner:not([hidden])'))
    .filter((e) => e.offsetParent).map((e) => e.textContent.trim()).join(' | '));
  throw new Error(what + ' not drawn within ' + TIMEOUT_MS / 1000 + ' s: ' + JSON.stringify(st) + (msgs ? '; page says: ' + msgs : ''));
}

try {
  browser = await chromium.launch({
    executablePath: chromiumPath, headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });
} catch (e) {
  console.error('FAIL: cannot launch ' + chromiumPath + ': ' + (e && e.message));
  process.exit(1);
}

const context = await browser.newContext({ viewport: { width: 1400, height: 900 }, deviceScaleFactor: 1 });
const page = await context.newPage();
page.setDefaultTimeout(TIMEOUT_MS);
page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text() + (m.location() && m.location().url ? ' (' + m.location().url + ')' : '')); });
page.on('pageerror', (e) => pageErrors.push(String(e && e.stack ? e.stack.split('\n').slice(0, 3).join(' ') : e)));
page.on('request', (r) => {
  const u = r.url();
  if (u.startsWith('data:') || u.startsWith('blob:')) return;
  try { if (new URL(u).origin !== origin) foreign.push(u); } catch (e) { foreign.push(u); }
});

let sweeps = [];
await step('the server answers /api/sweeps', async () => {
  let r;
  try { r = await fetch(args.url + '/api/sweeps'); } catch (e) {
    throw new Error('GET ' + args.url + '/api/sweeps: ' + (e.cause && e.cause.code || e.message) + ' (is the server running?)');
  }
  if (!r.ok) throw new Error('GET /api/sweeps: HTTP ' + r.status);
  sweeps = (await r.json()).sweeps || [];
});
if (failures.length) await finish();   // no server: the page checks would only time out

await step('overview renders', async () => {
  const resp = await page.goto(args.url + '/', { waitUntil: 'load' });
  if (!resp || !resp.ok()) throw new Error('GET / answered ' + (resp ? resp.status() : 'nothing'));
  await page.waitForSelector('#overview-body .sweep-card', { state: 'visible' });
  const text = await page.textContent('#overview-body');
  for (const s of sweeps) if (s.name && !text.includes(s.name)) throw new Error('sweep name "' + s.name + '" is not on the overview');
  if (!sweeps.length) throw new Error('/api/sweeps lists no sweep');
  await page.waitForFunction(() => !/connecting/.test(document.querySelector('#dbline').textContent));
  const header = await page.textContent('#dbline');
  if (!/schema v\d/.test(header)) throw new Error('header shows no schema version: "' + header + '"');
});
await shot(page, 'overview.png');

await step('runs table has --expect-runs rows', async () => {
  await goView(page, '#view=runs');
  try {
    await page.waitForFunction((n) => document.querySelectorAll('#runs-table tbody tr').length === n, args.expectRuns);
  } catch (e) {
    const n = await page.locator('#runs-table tbody tr').count();
    throw new Error('#runs-table tbody tr: ' + n + ' rows, expected ' + args.expectRuns);
  }
});
await shot(page, 'runs.png');

await step('curves chart draws the series', async () => {
  await goView(page, '#view=curves');
  const st = await waitCanvas(page, '#curves-chart canvas', (s) => s.colored >= 400, 'uPlot canvas in #curves-chart');
  console.log('   curves canvas ' + st.width + 'x' + st.height + ', ' + st.colored + ' colored pixels, ' + st.distinct + ' colors');
  const legend = await page.locator('#curves-chart .u-legend .u-series').count();
  if (legend < 2) throw new Error('the legend lists ' + legend + ' entries');
});
await shot(page, 'curves.png');

await step('layers heatmap is drawn', async () => {
  await goView(page, '#view=layers');
  const st = await waitCanvas(page, 'canvas#heatmap', (s) => s.distinct >= 16 && s.colored >= 2000, 'canvas#heatmap');
  console.log('   heatmap ' + st.width + 'x' + st.height + ', ' + st.colored + ' colored pixels, ' + st.distinct + ' colors');
});
await shot(page, 'layers.png');

await step('scaling view renders', async () => {
  await goView(page, '#view=scaling');
  await page.waitForFunction(() => {
    const acc = document.querySelector('#scaling-acc');
    return acc && (acc.querySelector('canvas') || acc.querySelector('.message'));
  });
  await page.waitForTimeout(300);
});
await shot(page, 'scaling.png');

await step('a link reopens its view', async () => {
  // A fresh page at a URL that names a view and its controls comes up in that view.
  const fresh = await context.newPage();
  try {
    await fresh.goto(args.url + '/#view=curves&y=lr&x=samples', { waitUntil: 'load' });
    await fresh.waitForFunction(() => document.querySelector('#curves-y').value === 'lr' &&
      document.querySelector('#curves-x').value === 'samples' &&
      !document.querySelector('#view-curves').hidden);
  } catch (e) {
    const got = await fresh.evaluate(() => [document.querySelector('#curves-y').value, document.querySelector('#curves-x').value]);
    throw new Error('#view=curves&y=lr&x=samples opened with y=' + got[0] + ' x=' + got[1]);
  } finally {
    await fresh.close();
  }
});

if (args.liveDb) {
  await step('the open page follows a write to the database', async () => {
    // What a sweep does when a job starts: a new running run. The page polls the data version.
    await goView(page, '#view=runs');
    await page.waitForFunction((n) => document.querySelectorAll('#runs-table tbody tr').length === n, args.expectRuns);
    const sweep = sweeps[0].sweep_id;
    execFileSync('sqlite3', [args.liveDb,
      "INSERT INTO runs(run_id, sweep_id, status, optimizer, global_batch, base_lr, seed, total_steps, last_step, started_at) " +
      "VALUES ('live0000000000aa', '" + sweep + "', 'running', 'lamb', 256, 0.01, 0, 100, 40, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))"]);
    try {
      await page.waitForFunction((n) => document.querySelectorAll('#runs-table tbody tr').length === n, args.expectRuns + 1,
        { timeout: 10000 });
    } catch (e) {
      throw new Error('10 s after the write the runs table still has ' + (await page.locator('#runs-table tbody tr').count()) + ' rows');
    }
    await goView(page, '#view=overview');
    await page.waitForFunction(() => /1 running/.test(document.querySelector('#overview-body').textContent), null, { timeout: 10000 });
  });
}

await step('no error banner', async () => {
  const visible = await page.isVisible('#error-banner');
  if (visible) throw new Error('#error-banner shows: ' + (await page.textContent('#error-banner')));
});
if (consoleErrors.length) fail('console errors: ' + consoleErrors.slice(0, 5).join(' | '));
if (pageErrors.length) fail('page errors: ' + pageErrors.slice(0, 5).join(' | '));
if (foreign.length) fail('requests leaving ' + origin + ': ' + foreign.slice(0, 5).join(', '));
await finish();
