"""Shared pieces of the batchlab figure scripts: arguments, read-only access to a sweep database
(standard library sqlite3), the best-learning-rate selection the report uses, and saving.

Every script is usable alone:
    /usr/bin/python3 analysis/plots/accuracy_vs_batch.py --db results/sweep.db --out acc.png
and through `batchlab plot --db ... --figure accuracy-vs-batch --out acc.png`. The study figures
draw from the study report's JSON (`batchlab report --db X --format json > r.json`, then
`--report r.json`), so the fit they show is the report's own; `batchlab plot` writes it for them.
Exit status 2 means the database cannot give this figure (no such file, no matching runs or rows)
or matplotlib is missing (the message says how to install it).
"""

import argparse
import json
import math
import os
import sqlite3
import sys

# A fixed canvas so the output size is known: 8 x 5 inches at 100 dpi = 800 x 500 pixels.
FIG_SIZE = (8.0, 5.0)
DPI = 100


class FigureInputError(Exception):
    """The database cannot give the requested figure; reported with exit status 2."""


def parse_args(description, needs_run=False, study=False):
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--db", required=not study, help="sweep database (SQLite)")
    p.add_argument("--out", required=True, help="output PNG file")
    p.add_argument("--where", default="", help="SQL condition on the runs table (alias r)")
    p.add_argument("--metric", default="test_acc", choices=["test_acc", "test_loss"])
    p.add_argument("--best", action="store_true", help="best evaluation instead of the final one")
    p.add_argument("--target", type=float, default=None, help="target value (default: the first)")
    p.add_argument("--series", default="optimizer",
                   help="runs columns whose values make one line, comma-separated "
                        "(default optimizer; e.g. optimizer,scaling)")
    if needs_run:
        p.add_argument("--run", default="", help="run id or unique prefix (default: chosen)")
    if study:
        p.add_argument("--report", default="",
                       help="the study report as JSON (batchlab report --db DB --format json); "
                            "figures with one panel per study take several, comma-separated")
        p.add_argument("--titles", default="",
                       help="panel titles, separated by | (figures with one panel per study)")
    return p.parse_args()


def load_study_report(args):
    """The study report's JSON (analysis/study_report.h): cells with their trials, fits, cost."""
    if not args.report:
        raise FigureInputError("give --report FILE, the study report written by "
                               "`batchlab report --db DB --format json > FILE` "
                               "(batchlab plot does this itself)")
    return read_study_report(args.report)


def read_study_report(path):
    """One study report JSON file, checked to be a study's with cells."""
    try:
        with open(path, encoding="utf-8") as f:
            report = json.load(f)
    except (OSError, ValueError) as e:
        raise FigureInputError(f"--report {path}: {e}")
    if report.get("kind") != "study":
        raise FigureInputError(f"--report {path}: not a study report (the database has "
                               "no study_cells rows)")
    if not report.get("cells"):
        raise FigureInputError(f"--report {path}: the study has no cells yet")
    return report


def require_matplotlib():
    """Says which module is missing and how to install it, instead of a traceback."""
    try:
        import matplotlib  # noqa: F401
    except ImportError as e:
        missing = getattr(e, "name", None) or "matplotlib"
        print(f"{os.path.basename(sys.argv[0])}: the Python module '{missing}' is missing for "
              f"{sys.executable}, and the figures need matplotlib; install it with "
              "scripts/setup.sh --with-python (or: sudo apt-get install python3-matplotlib "
              "python3-numpy)", file=sys.stderr)
        sys.exit(2)


def connect(path):
    if not os.path.isfile(path):
        raise FigureInputError(f"--db {path}: no such database file")
    uri = "file:" + os.path.abspath(path) + "?mode=ro"
    db = sqlite3.connect(uri, uri=True)
    db.execute("PRAGMA query_only = 1")
    return db


def where_clause(where):
    return f" WHERE ({where})" if where else ""


def query(db, sql, params=()):
    try:
        return db.execute(sql, params).fetchall()
    except sqlite3.Error as e:
        raise FigureInputError(f"{e} (in: {sql})")


def series_columns(db, series):
    """The --series columns, checked against the runs table."""
    columns = [r[1] for r in query(db, "PRAGMA table_info(runs)")]
    names = [c.strip() for c in series.split(",") if c.strip()]
    for c in names:
        if c not in columns:
            raise FigureInputError(f"--series {c}: not a column of the runs table; one of: "
                                   + ", ".join(columns))
    if not names:
        raise FigureInputError("--series: give at least one runs column")
    return names


def evals_columns(db):
    return {r[1] for r in query(db, "PRAGMA table_info(evals)")}


def runs_with_finals(db, where="", metric="test_acc", best=False, series="optimizer"):
    """One dict per run: identity, setting, status, its series label (the --series columns joined
    by '/'), its final (or best) evaluation and its last validation evaluation (val_acc, val_loss:
    None without a validation split or before schema v3)."""
    agg = ("max" if metric == "test_acc" else "min") if best else None
    cols = series_columns(db, series)
    rows = query(db, "SELECT r.run_id, r.global_batch, r.base_lr, r.peak_lr, r.seed, r.status"
                     + "".join(f", r.{c}" for c in cols) + " FROM runs r" + where_clause(where))
    runs = {}
    for row in rows:
        run_id, batch, base_lr, peak_lr, seed, status = row[:6]
        label = "/".join(str(v) for v in row[6:])
        runs[run_id] = dict(run_id=run_id, optimizer=label, batch=batch, base_lr=base_lr,
                            peak_lr=peak_lr, seed=seed, status=status, metric=None,
                            gap_acc=None, gap_loss=None, val_acc=None, val_loss=None)
    finals = query(db, "SELECT e.run_id, e.test_acc, e.test_loss, e.gap_acc, e.gap_loss FROM evals e "
                       "JOIN (SELECT run_id, max(step) AS last FROM evals GROUP BY run_id) m "
                       "ON m.run_id = e.run_id AND m.last = e.step")
    for run_id, acc, loss, gap_acc, gap_loss in finals:
        if run_id in runs:
            r = runs[run_id]
            r["metric"] = acc if metric == "test_acc" else loss
            r["gap_acc"], r["gap_loss"] = gap_acc, gap_loss
    if agg:
        for run_id, value in query(db, f"SELECT run_id, {agg}({metric}) FROM evals GROUP BY run_id"):
            if run_id in runs:
                runs[run_id]["metric"] = value
    if "val_acc" in evals_columns(db):
        for run_id, val_acc, val_loss in query(
                db, "SELECT e.run_id, e.val_acc, e.val_loss FROM evals e JOIN (SELECT run_id, "
                    "max(step) AS last FROM evals WHERE val_acc IS NOT NULL OR val_loss IS NOT NULL "
                    "GROUP BY run_id) m ON m.run_id = e.run_id AND m.last = e.step"):
            if run_id in runs:
                runs[run_id]["val_acc"], runs[run_id]["val_loss"] = val_acc, val_loss
    return list(runs.values())


def mean_sd(values):
    values = [v for v in values if v is not None]
    if not values:
        return None, None
    m = sum(values) / len(values)
    if len(values) < 2:
        return m, 0.0
    return m, math.sqrt(sum((v - m) ** 2 for v in values) / (len(values) - 1))


def best_lr_groups(runs, select_by="val_acc"):
    """{(series, batch): [finished runs of the group's selected base LR]}.

    The rule of `batchlab report` (analysis/report.h): a group with one base LR is that LR; with
    several, the one with the best mean last validation metric over its finished runs (highest
    val_acc, lowest val_loss). Test metrics never choose: a group with several LRs and no
    validation rows is left out, and a note on stderr says so.
    """
    groups = {}
    for r in runs:
        groups.setdefault((r["optimizer"], r["batch"]), {}).setdefault(r["base_lr"], []).append(r)
    out = {}
    for key, by_lr in groups.items():
        best = next(iter(by_lr)) if len(by_lr) == 1 else select_lr(by_lr, select_by)
        if best is None:
            print(f"note: {key[0]} batch {key[1]}: no LR selected among {len(by_lr)} base LRs: no "
                  f"{select_by} rows (hold out a validation split with data.val_size)",
                  file=sys.stderr)
            continue
        done = [r for r in by_lr[best] if r["status"] == "done"]
        if done:
            out[key] = done
    return out


def select_lr(by_lr, select_by):
    """The base LR with the best mean validation metric over its finished runs; None without any."""
    best, best_score = None, None
    for lr, members in by_lr.items():
        m, _ = mean_sd([r[select_by] for r in members if r["status"] == "done"])
        if m is None:
            continue
        if best_score is None or (m > best_score if select_by == "val_acc" else m < best_score):
            best, best_score = lr, m
    return best


def runs_with_rows(db, table, where="", prefix="", order="t.run_id"):
    """Run ids with rows in `table` among the runs matching `where`, those starting with `prefix`
    when one is given, in `order` (over the table t and runs r); at most 12 (one figure's lines)."""
    runs = [r[0] for r in query(db, f"SELECT DISTINCT t.run_id FROM {table} t JOIN runs r "
                                    "ON r.run_id = t.run_id" + where_clause(where)
                                    + f" ORDER BY {order}")]
    return [r for r in runs if r.startswith(prefix)][:12]


def pick_run(db, prefix, table, where=""):
    """The run a one-run figure shows: the id (prefix) given, else the run with most `table` rows."""
    if prefix:
        rows = query(db, "SELECT run_id FROM runs WHERE run_id LIKE ?", (prefix + "%",))
        if not rows:
            raise FigureInputError(f"--run {prefix}: no run id starts with it")
        if len(rows) > 1:
            raise FigureInputError(f"--run {prefix}: {len(rows)} runs match; give more characters")
        return rows[0][0]
    rows = query(db, f"SELECT t.run_id, count(*) AS n FROM {table} t JOIN runs r ON r.run_id = t.run_id"
                     + where_clause(where) + " GROUP BY t.run_id ORDER BY n DESC, t.run_id LIMIT 1")
    if not rows:
        raise FigureInputError(f"no run has rows in the {table} table"
                               + (" (train.layer_stats_every / train.noise_scale)"
                                  if table in ("layer_stats", "noise_scale") else ""))
    return rows[0][0]


def run_label(db, run_id):
    row = query(db, "SELECT optimizer, global_batch, base_lr, seed FROM runs WHERE run_id = ?",
                (run_id,))
    if not row:
        return run_id[:8]
    opt, batch, lr, seed = row[0]
    return f"{opt}, batch {batch}, base_lr {lr:g}, seed {seed} ({run_id[:8]})"


def new_figure(ncols=1, panel_width=None):
    """A figure of FIG_SIZE, or of ncols panels each panel_width inches wide."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    size = FIG_SIZE if panel_width is None else (panel_width * ncols, FIG_SIZE[1] + 0.5)
    fig, axes = plt.subplots(1, ncols, figsize=size, dpi=DPI)
    return plt, fig, axes


def geometric(low, high, n=64):
    """n points from low to high, evenly spaced on a log axis."""
    if high <= low:
        return [low]
    step = (high / low) ** (1.0 / (n - 1))
    return [low * step ** i for i in range(n)]


def save(plt, fig, out):
    directory = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(directory):
        raise FigureInputError(f"--out {out}: directory {directory} does not exist")
    fig.tight_layout()
    # No bbox_inches="tight": that would change the pixel size from figure to figure.
    fig.savefig(out, dpi=DPI)
    plt.close(fig)


def main(draw, description, needs_run=False, study=False):
    args = parse_args(description, needs_run, study)
    require_matplotlib()
    try:
        db = connect(args.db) if args.db else None
        draw(db, args)
    except FigureInputError as e:
        print(f"{os.path.basename(sys.argv[0])}: {e}", file=sys.stderr)
        sys.exit(2)
