"""Shared pieces of the batchlab figure scripts: arguments, read-only access to a sweep database
(standard library sqlite3), the best-learning-rate selection the report uses, and saving.

Every script is usable alone:
    /usr/bin/python3 analysis/plots/accuracy_vs_batch.py --db results/sweep.db --out acc.png
and through `batchlab plot --db ... --figure accuracy-vs-batch --out acc.png`.
Exit status 2 means the database cannot give this figure (no such file, no matching runs or rows).
"""

import argparse
import math
import os
import sqlite3
import sys

# A fixed canvas so the output size is known: 8 x 5 inches at 100 dpi = 800 x 500 pixels.
FIG_SIZE = (8.0, 5.0)
DPI = 100


class FigureInputError(Exception):
    """The database cannot give the requested figure; reported with exit status 2."""


def parse_args(description, needs_run=False):
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--db", required=True, help="sweep database (SQLite)")
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
    return p.parse_args()


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


def runs_with_finals(db, where="", metric="test_acc", best=False, series="optimizer"):
    """One dict per run: identity, setting, status, its series label (the --series columns joined
    by '/') and its final (or best) evaluation."""
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
                            gap_acc=None, gap_loss=None)
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
    return list(runs.values())


def mean_sd(values):
    values = [v for v in values if v is not None]
    if not values:
        return None, None
    m = sum(values) / len(values)
    if len(values) < 2:
        return m, 0.0
    return m, math.sqrt(sum((v - m) ** 2 for v in values) / (len(values) - 1))


def best_lr_groups(runs, higher_better=True):
    """{(series, batch): [runs of the base LR with the best mean metric over finished runs]}.

    The same rule as `batchlab report`: a group with several base LRs is represented by its best.
    """
    groups = {}
    for r in runs:
        groups.setdefault((r["optimizer"], r["batch"]), {}).setdefault(r["base_lr"], []).append(r)
    out = {}
    for key, by_lr in groups.items():
        best, best_score = None, None
        for lr, members in by_lr.items():
            m, _ = mean_sd([r["metric"] for r in members if r["status"] == "done"])
            if m is None:
                continue
            if best_score is None or (m > best_score if higher_better else m < best_score):
                best, best_score = lr, m
        if best is not None:
            out[key] = [r for r in by_lr[best] if r["status"] == "done"]
    return out


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


def new_figure(ncols=1):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, ncols, figsize=FIG_SIZE, dpi=DPI)
    return plt, fig, axes


def save(plt, fig, out):
    directory = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(directory):
        raise FigureInputError(f"--out {out}: directory {directory} does not exist")
    fig.tight_layout()
    # No bbox_inches="tight": that would change the pixel size from figure to figure.
    fig.savefig(out, dpi=DPI)
    plt.close(fig)


def main(draw, description, needs_run=False):
    args = parse_args(description, needs_run)
    try:
        db = connect(args.db)
        draw(db, args)
    except FigureInputError as e:
        print(f"{os.path.basename(sys.argv[0])}: {e}", file=sys.stderr)
        sys.exit(2)
