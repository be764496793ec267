#!/usr/bin/python3
"""Headless-browser test of the `batchlab serve` dashboard, run by CTest against a live server:

    /usr/bin/python3 tests/serve/browser_test.py --url http://127.0.0.1:PORT --expect-runs N --out DIR
        [--live-db PATH]   (the served database: the test writes a run into it, as a sweep would,
                            and checks that the open page shows it without a reload)

Drives Debian's chromium (headless) through chromedriver with Debian's python3-selenium; nothing
from npm. Exit codes: 0 pass, 1 a check failed, 2 bad arguments, 77 skipped (chromium,
chromedriver or selenium missing; CTest's SKIP_RETURN_CODE).
Env: BATCHLAB_CHROMIUM (browser binary), BATCHLAB_CHROMEDRIVER (driver binary).
"""
import argparse
import base64
import json
import os
import re
import sqlite3
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

TIMEOUT_S = 20.0
# A planted off-origin image (TEST-NET-1, never routed): the off-origin check must see it, or it
# could not see a real one either.
CANARY = 'http://192.0.2.1/batchlab-browser-test-canary.png'


def usage(msg):
    print('browser_test: ' + msg, file=sys.stderr)
    print('usage: /usr/bin/python3 tests/serve/browser_test.py --url http://127.0.0.1:PORT '
          '--expect-runs N --out DIR [--live-db PATH]', file=sys.stderr)
    sys.exit(2)


def parse_args(argv):
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument('--url')
    p.add_argument('--expect-runs')
    p.add_argument('--out')
    p.add_argument('--live-db')
    a, rest = p.parse_known_args(argv)
    if rest:
        usage('unknown argument ' + rest[0])
    if not a.url:
        usage('--url is required')
    if a.expect_runs is None or not a.expect_runs.isdigit():
        usage('--expect-runs N (a count) is required')
    if not a.out:
        usage('--out is required')
    return argparse.Namespace(url=a.url.rstrip('/'), expect_runs=int(a.expect_runs),
                              out=os.path.abspath(a.out),
                              live_db=os.path.abspath(a.live_db) if a.live_db else None)


def skip(why):
    print('SKIP: ' + why + '; install it with: bash scripts/setup.sh --with-python')
    sys.exit(77)


args = parse_args(sys.argv[1:])
chromium = os.environ.get('BATCHLAB_CHROMIUM', '/usr/bin/chromium')
chromedriver = os.environ.get('BATCHLAB_CHROMEDRIVER', '/usr/bin/chromedriver')
if not os.access(chromium, os.X_OK):
    skip('chromium not found at ' + chromium + ' (apt-get install chromium, or set BATCHLAB_CHROMIUM)')
if not os.access(chromedriver, os.X_OK):
    skip('chromedriver not found at ' + chromedriver +
         ' (apt-get install chromium-driver, or set BATCHLAB_CHROMEDRIVER)')
try:
    from selenium import webdriver
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
except ImportError as e:
    skip('selenium does not import in ' + sys.executable + ' (' + str(e) + '; apt-get install python3-selenium)')
os.makedirs(args.out, exist_ok=True)

origin = '{0.scheme}://{0.netloc}'.format(urllib.parse.urlsplit(args.url))
failures = []
console_errors = []   # SEVERE browser-log entries: console.error, uncaught exceptions, failed loads, CSP
requested = []        # every URL the browser asked for (DevTools Network.requestWillBeSent)
driver = None


def fail(msg):
    failures.append(msg)
    print('FAIL: ' + msg, file=sys.stderr, flush=True)


def finish():
    if driver is not None:
        try:
            driver.quit()
        except Exception:
            pass
    if failures:
        print('browser_test: %d check(s) failed; screenshots in %s' % (len(failures), args.out), file=sys.stderr)
        sys.exit(1)
    print('browser_test: all checks passed; screenshots in ' + args.out)
    sys.exit(0)


def step(name, fn):
    """A step that fails records its message and the test goes on to the next view."""
    try:
        fn()
        print('ok: ' + name, flush=True)
    except Exception as e:  # noqa: BLE001 - every failure of a step is reported, none stops the test
        text = str(e).strip().split('\n')[0] if str(e).strip() else type(e).__name__
        fail(name + ': ' + text)


def collect_logs():
    """Drains chromedriver's browser and performance logs into console_errors and requested."""
    if driver is None:
        return
    try:
        for entry in driver.get_log('browser'):
            if entry.get('level') == 'SEVERE':
                console_errors.append(entry.get('message', ''))
    except WebDriverException as e:
        fail('cannot read the browser console log: ' + str(e).split('\n')[0])
    try:
        for entry in driver.get_log('performance'):
            msg = json.loads(entry['message']).get('message', {})
            method = msg.get('method')
            params = msg.get('params', {})
            if method == 'Network.requestWillBeSent':
                requested.append(params.get('request', {}).get('url', ''))
            elif method == 'Network.webSocketCreated':
                requested.append(params.get('url', ''))
    except WebDriverException as e:
        fail('cannot read the DevTools performance log: ' + str(e).split('\n')[0])


def off_origin(urls):
    out = []
    for u in urls:
        if u.startswith('data:') or u.startswith('blob:') or u == 'about:blank':
            continue
        try:
            parts = urllib.parse.urlsplit(u)
            if '{0.scheme}://{0.netloc}'.format(parts) != origin:
                out.append(u)
        except ValueError:
            out.append(u)
    return out


def js(script, *a):
    return driver.execute_script(script, *a)


def wait_for(script, what, timeout=TIMEOUT_S, *a):
    """Polls a JS expression (`return ...`) until it is truthy; raises naming `what` otherwise."""
    t0 = time.time()
    last_err = None
    while time.time() - t0 < timeout:
        try:
            v = js(script, *a)
            if v:
                return v
        except WebDriverException as e:
            last_err = str(e).split('\n')[0]
        time.sleep(0.1)
    raise AssertionError(what + ' (not within %g s)' % timeout + ('; last error: ' + last_err if last_err else ''))


def go_view(hash_):
    js('location.hash = arguments[0];', hash_)


def shot(name):
    """A full-page PNG of the open tab (DevTools' Page.captureScreenshot beyond the viewport)."""
    path = os.path.join(args.out, name)
    try:
        m = driver.execute_cdp_cmd('Page.getLayoutMetrics', {})
        size = m.get('cssContentSize') or m.get('contentSize')
        w = max(1, int(size['width']))
        h = max(1, int(size['height']))
        png = driver.execute_cdp_cmd('Page.captureScreenshot', {
            'format': 'png', 'captureBeyondViewport': True, 'fromSurface': True,
            'clip': {'x': 0, 'y': 0, 'width': w, 'height': h, 'scale': 1}})
        with open(path, 'wb') as f:
            f.write(base64.b64decode(png['data']))
    except Exception as e:  # noqa: BLE001
        fail('screenshot ' + name + ': ' + str(e).split('\n')[0])


# Counts the pixels of the canvases under a selector that are strongly colored (lines, points,
# cells) as opposed to the white background and the gray axes, grid and labels, and the distinct
# quantized colors among them; reports the canvas with the most (a chart may stack several).
CANVAS_STATS = r'''
const all = Array.from(document.querySelectorAll(arguments[0]));
if (!all.length) return {missing: true};
let best = null;
for (const cv of all) {
  let st = {width: cv.width, height: cv.height, colored: 0, distinct: 0};
  if (cv.width && cv.height) {
    const px = cv.getContext('2d').getImageData(0, 0, cv.width, cv.height).data;
    const colors = new Set();
    for (let i = 0; i < px.length; i += 4) {
      const r = px[i], g = px[i + 1], b = px[i + 2], a = px[i + 3];
      if (a < 128) continue;
      if (Math.max(r, g, b) - Math.min(r, g, b) > 60) { st.colored++; colors.add((r >> 3) << 10 | (g >> 3) << 5 | (b >> 3)); }
    }
    st.distinct = colors.size;
  }
  if (!best || st.colored > best.colored) best = st;
}
best.canvases = all.length;
return best;
'''

PAGE_MESSAGES = r'''
return Array.from(document.querySelectorAll('.message:not([hidden]), #error-banner:not([hidden])'))
  .filter((e) => e.offsetParent).map((e) => e.textContent.trim()).join(' | ');
'''


def wait_canvas(selector, ok, what):
    t0 = time.time()
    st = None
    while time.time() - t0 < TIMEOUT_S:
        st = js(CANVAS_STATS, selector)
        if not st.get('missing') and ok(st):
            return st
        time.sleep(0.25)
    msgs = js(PAGE_MESSAGES)
    raise AssertionError('%s not drawn within %g s: %s%s' % (what, TIMEOUT_S, json.dumps(st),
                                                           '; page says: ' + msgs if msgs else ''))


def row_count():
    return js("return document.querySelectorAll('#runs-table tbody tr').length;")


# ---------------------------------------------------------------------------------------- the checks
sweeps = []


def check_server():
    global sweeps
    try:
        with urllib.request.urlopen(args.url + '/api/sweeps', timeout=10) as r:
            sweeps = json.load(r).get('sweeps') or []
    except urllib.error.HTTPError as e:
        raise AssertionError('GET /api/sweeps: HTTP %d' % e.code)
    except (urllib.error.URLError, OSError) as e:
        raise AssertionError('GET %s/api/sweeps: %s (is the server running?)' % (args.url, getattr(e, 'reason', e)))


step('the server answers /api/sweeps', check_server)
if failures:
    finish()   # no server: the page checks would only time out

opts = Options()
opts.binary_location = chromium
for a in ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage',
          '--window-size=1400,900', '--force-device-scale-factor=1', '--no-first-run',
          '--disable-background-networking', '--disable-component-update', '--disable-default-apps',
          '--disable-sync', '--disable-extensions']:
    opts.add_argument(a)
opts.set_capability('goog:loggingPrefs', {'browser': 'ALL', 'performance': 'ALL'})
try:
    driver = webdriver.Chrome(service=Service(executable_path=chromedriver), options=opts)
except Exception as e:  # noqa: BLE001
    print('FAIL: cannot start %s through %s: %s' % (chromium, chromedriver, str(e).strip().split('\n')[0]),
          file=sys.stderr)
    sys.exit(1)
driver.set_page_load_timeout(TIMEOUT_S)
driver.set_script_timeout(TIMEOUT_S)
# the viewport the screenshots show, at one device pixel per CSS pixel
driver.execute_cdp_cmd('Emulation.setDeviceMetricsOverride',
                       {'width': 1400, 'height': 900, 'deviceScaleFactor': 1, 'mobile': False})


def check_overview():
    driver.get(args.url + '/')
    wait_for("const c = document.querySelector('#overview-body .sweep-card'); return !!(c && c.offsetParent);",
             '#overview-body .sweep-card is not visible')
    text = js("return document.querySelector('#overview-body').textContent;")
    if not sweeps:
        raise AssertionError('/api/sweeps lists no sweep')
    for s in sweeps:
        if s.get('name') and s['name'] not in text:
            raise AssertionError('sweep name "%s" is not on the overview' % s['name'])
    wait_for("return !/connecting/.test(document.querySelector('#dbline').textContent);",
             'the header still says connecting')
    header = js("return document.querySelector('#dbline').textContent;")
    if not re.search(r'schema v\d', header):
        raise AssertionError('header shows no schema version: "%s"' % header)


step('overview renders', check_overview)
shot('overview.png')


def check_runs():
    go_view('#view=runs')
    try:
        wait_for("return document.querySelectorAll('#runs-table tbody tr').length === arguments[0];",
                 'rows', TIMEOUT_S, args.expect_runs)
    except AssertionError:
        raise AssertionError('#runs-table tbody tr: %d rows, expected %d' % (row_count(), args.expect_runs))


step('runs table has --expect-runs rows', check_runs)
shot('runs.png')


def check_curves():
    go_view('#view=curves')
    st = wait_canvas('#curves-chart canvas', lambda s: s['colored'] >= 400, 'the chart canvas in #curves-chart')
    print('   curves canvas %dx%d, %d colored pixels, %d colors' % (st['width'], st['height'], st['colored'], st['distinct']))
    n = js("return document.querySelectorAll('#curves-chart .chart-legend .legend-item').length;")
    if n < 2:
        raise AssertionError('the legend lists %d entries' % n)


step('curves chart draws the series', check_curves)
shot('curves.png')


def check_layers():
    go_view('#view=layers')
    st = wait_canvas('canvas#heatmap', lambda s: s['distinct'] >= 16 and s['colored'] >= 2000, 'canvas#heatmap')
    print('   heatmap %dx%d, %d colored pixels, %d colors' % (st['width'], st['height'], st['colored'], st['distinct']))


step('layers heatmap is drawn', check_layers)
shot('layers.png')


def check_scaling():
    go_view('#view=scaling')
    wait_for("const acc = document.querySelector('#scaling-acc');"
             "return !!(acc && (acc.querySelector('canvas') || acc.querySelector('.message')));",
             '#scaling-acc shows neither a chart nor a message')
    time.sleep(0.3)


step('scaling view renders', check_scaling)
shot('scaling.png')


def check_link():
    # A fresh tab at a URL that names a view and its controls comes up in that view.
    main = driver.current_window_handle
    driver.switch_to.new_window('tab')
    try:
        driver.get(args.url + '/#view=curves&y=lr&x=samples')
        try:
            wait_for("return document.querySelector('#curves-y').value === 'lr' &&"
                     " document.querySelector('#curves-x').value === 'samples' &&"
                     " !document.querySelector('#view-curves').hidden;", 'view')
        except AssertionError:
            got = js("return [document.querySelector('#curves-y').value, document.querySelector('#curves-x').value];")
            raise AssertionError('#view=curves&y=lr&x=samples opened with y=%s x=%s' % (got[0], got[1]))
    finally:
        collect_logs()
        driver.close()
        driver.switch_to.window(main)


step('a link reopens its view', check_link)


def check_live():
    # What a sweep does when a job starts: a new running run. The page polls the data version.
    go_view('#view=runs')
    wait_for("return document.querySelectorAll('#runs-table tbody tr').length === arguments[0];",
             'the runs table before the write has %d rows' % args.expect_runs, TIMEOUT_S, args.expect_runs)
    con = sqlite3.connect(args.live_db, timeout=10)
    try:
        with con:
            con.execute(
                "INSERT INTO runs(run_id, sweep_id, status, optimizer, global_batch, base_lr, seed, total_steps,"
                " last_step, started_at) VALUES ('live0000000000aa', ?, 'running', 'lamb', 256, 0.01, 0, 100, 40,"
                " strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))", (sweeps[0].get('sweep_id'),))
    finally:
        con.close()
    try:
        wait_for("return document.querySelectorAll('#runs-table tbody tr').length === arguments[0];",
                 'rows', 10.0, args.expect_runs + 1)
    except AssertionError:
        raise AssertionError('10 s after the write the runs table still has %d rows' % row_count())
    go_view('#view=overview')
    wait_for("return /1 running/.test(document.querySelector('#overview-body').textContent);",
             'the overview does not show "1 running"', 10.0)


if args.live_db:
    step('the open page follows a write to the database', check_live)


def check_banner():
    if js("const b = document.querySelector('#error-banner'); return !!(b && !b.hidden && b.offsetParent);"):
        raise AssertionError('#error-banner shows: ' + js("return document.querySelector('#error-banner').textContent;"))


step('no error banner', check_banner)
collect_logs()
if console_errors:
    fail('console errors: ' + ' | '.join(console_errors[:5]))
    console_errors.clear()
foreign = off_origin(requested)
if foreign:
    fail('requests leaving %s: %s' % (origin, ', '.join(foreign[:5])))
else:
    print('ok: no console errors, no request leaving the origin (%d requests, all to %s)'
          % (len(requested), origin), flush=True)


def check_canary():
    # The check above reads what DevTools saw the browser request; a planted off-origin image
    # (blocked by the page's Content-Security-Policy, still requested) must show up there.
    js("const i = document.createElement('img'); i.src = arguments[0]; i.alt = ''; document.body.append(i);", CANARY)
    t0 = time.time()
    while time.time() - t0 < 5:
        time.sleep(0.2)
        collect_logs()
        if CANARY in off_origin(requested):
            break
    # its Content-Security-Policy report is the expected one: it is not a console error of the page
    console_errors[:] = [m for m in console_errors if CANARY not in m]
    if CANARY not in off_origin(requested):
        raise AssertionError('a planted off-origin <img src="%s"> was not seen: the off-origin check is blind'
                             % CANARY)


step('the off-origin check sees a planted off-origin image', check_canary)
if console_errors:
    fail('console errors after the last checks: ' + ' | '.join(console_errors[:5]))
finish()
