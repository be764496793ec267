"""scaling-panels: the LARS-versus-LAMB figure (issue 23). One panel per scaling study (for
example images: the Fashion-MNIST study; text: the BERT study), steps to target against the global
batch on log-log axes, one colour per optimizer (fit series). Measured points are the geometric
mean over a batch's seeds with a bar over the seeds' range; censored cells are open markers at
their cap with an arrow up. Each series' fit S(B) = S_min + E_min/B is the solid line, its 95%
band from the bootstrap over seeds is shaded and its B_crit interval is in the legend (with the
lack-of-fit p where the report's test rejects the curve), with the 20%-over-linear-scaling batch
from the measured steps and its reference batch; each definition of the critical batch is marked
on the curve (triangle E_min/S_min, square the 20% batch, cross B_simple); the curve the noise scale predicts,
S_min (1 + B_simple/B), is dotted; perfect scaling (steps halve when the batch doubles) is the
dashed grey line through each series' smallest batch. The numbers are the
study reports' own (batchlab report --format json), so the figure says what the report says."""

import math

from common import FigureInputError, geometric, main, new_figure, read_study_report, save


def seed_points(cells):
    """{batch: (geometric mean, min, max, seeds)} over the reached cells; a batch with a censored
    seed is left to the censored markers, as the fit leaves it out."""
    by_batch = {}
    for c in cells:
        by_batch.setdefault(c["global_batch"], []).append(c)
    points, censored = {}, []
    for batch, members in sorted(by_batch.items()):
        steps = [c["steps_to_target"] for c in members
                 if c["status"] == "reached" and c["steps_to_target"]]
        if any(c["status"] == "censored" for c in members):
            censored.append((batch, max(c["cap_steps"] for c in members)))
            continue
        if steps:
            mean = math.exp(sum(math.log(s) for s in steps) / len(steps))
            points[batch] = (mean, min(steps), max(steps), len(steps))
    return points, censored


def fit_label(series, fit):
    params = fit.get("fit") or {}
    label = series
    if params.get("b_crit"):
        label += f": E_min/S_min {params['b_crit']:.0f}"
        interval = (fit.get("bootstrap") or {}).get("b_crit")
        if interval:
            # A null upper end: some resamples had no critical batch, B_crit is unbounded above.
            high = "∞" if interval[1] is None else f"{interval[1]:.0f}"
            label += f" [{interval[0]:.0f}, {high}]"
        elif params.get("b_crit_se"):
            label += f" ± {params['b_crit_se']:.0f}"
    # The 20%-over-linear-scaling batch (Zhang et al. 2024) from the measured steps, with its
    # reference batch: the report's other definition (docs/analysis.md).
    d = fit.get("definitions") or {}
    if d:
        measured = d.get("measured_excess")
        text = f"{measured:.0f}" if measured else f"> {d['largest_batch']:.0f}"
        # Its spread named as the report names it: [95%] from 3 seeds a batch, else the seeds'
        # range.
        spread = d.get("measured_excess_spread") or {}
        if measured and spread.get("kind") in ("95%", "seed range"):
            high = "∞" if spread["high"] is None else f"{spread['high']:.0f}"
            bounds = f"{spread['low']:.0f}, {high}"
            text += f" [{bounds}]" if spread["kind"] == "95%" else f" (seed range {bounds})"
        label += f"; 20% over linear from {d['reference_batch']:.0f}: {text}"
    # The report's lack-of-fit test (docs/analysis.md): a curve that misses its batches' means.
    test = fit.get("lack_of_fit") or {}
    if test.get("p") is not None and test["p"] < 0.05:
        label += f" (curve misfits, p = {test['p']:.2g})"
    return label


def draw_series(ax, color, series, cells, fit):
    """Draws one series; returns the step counts it measured (for the axis range)."""
    points, censored = seed_points(cells)
    batches = sorted(list(points) + [b for b, _ in censored])
    if not batches:
        return []
    curve_b = geometric(min(batches), max(batches))
    if points:
        xs = sorted(points)
        ys = [points[b][0] for b in xs]
        # The mean of one seed is exp(log s): it can miss s by a rounding error either way.
        low = [max(0.0, points[b][0] - points[b][1]) for b in xs]
        high = [max(0.0, points[b][2] - points[b][0]) for b in xs]
        ax.errorbar(xs, ys, yerr=[low, high], fmt="o", color=color, ms=4, capsize=2, lw=1,
                    label=fit_label(series, fit))
        ax.plot(curve_b, [ys[0] * xs[0] / b for b in curve_b], "--", color="gray", alpha=0.35,
                lw=0.8)
    for i, (b, cap) in enumerate(censored):
        # A series that reached nowhere has no errorbar to carry its name: its first marker does.
        label = f"{series}: censored at every batch, no fit" if not points and i == 0 else None
        ax.plot([b], [cap], "o", mfc="none", color=color, ms=5, label=label)
        ax.annotate("", xy=(b, cap * 1.5), xytext=(b, cap),
                    arrowprops=dict(arrowstyle="->", color=color, lw=1.0))
    params = fit.get("fit")
    if params:
        s_min, e_min = params["s_min"], params["e_min"]
        ax.plot(curve_b, [s_min + e_min / b for b in curve_b], "-", color=color, lw=1.2)
        band = (fit.get("bootstrap") or {}).get("band") or []
        if band:
            ax.fill_between([p[0] for p in band], [p[1] for p in band], [p[2] for p in band],
                            color=color, alpha=0.15, lw=0)
        # Each definition of the critical batch, marked on the fitted curve.
        d = fit.get("definitions") or {}
        for batch, marker in ((params.get("b_crit"), "^"), (d.get("measured_excess"), "s"),
                              (fit.get("b_simple"), "x")):
            if batch and batch > 0:
                ax.plot([batch], [s_min + e_min / batch], marker, color=color, ms=6, mfc="none")
        if fit.get("b_simple") and s_min > 0:
            bs = fit["b_simple"]
            ax.plot(curve_b, [s_min * (1 + bs / b) for b in curve_b], ":", color=color, lw=1.2)
    return [p[1] for p in points.values()] + [p[2] for p in points.values()] + \
        [cap for _, cap in censored]


# One colour per optimizer in every panel, so a reader matches them across tasks.
OPTIMIZER_ORDER = ["sgd", "nesterov", "adamw", "adam", "lars", "lamb"]


def draw_panel(plt, ax, report, title):
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    drawn = []
    for fit in report["fits"]:
        opt = fit.get("optimizer", fit["series"])
        index = OPTIMIZER_ORDER.index(opt) if opt in OPTIMIZER_ORDER else len(OPTIMIZER_ORDER)
        cells = [c for c in report["cells"] if c["series"] == fit["series"]]
        drawn += draw_series(ax, colors[index % len(colors)], fit["series"], cells, fit)
    if not drawn:
        raise FigureInputError(f"{title}: no cell of the study has reached its target or been "
                               "censored yet")
    ax.plot([], [], "--", color="gray", alpha=0.35, label="perfect scaling")
    # A legend entry only for what a panel draws: a study without noise-scale runs has no dotted line.
    if any(fit.get("b_simple") and (fit.get("fit") or {}).get("s_min", 0) > 0
           for fit in report["fits"]):
        ax.plot([], [], ":", color="gray", label="S_min (1 + B_simple/B)")
    ax.plot([], [], "o", mfc="none", color="gray", label="censored (at the cap)")
    ax.plot([], [], "^", mfc="none", color="gray", label="E_min/S_min (McCandlish)")
    ax.plot([], [], "s", mfc="none", color="gray", label="20% over linear, measured (Zhang)")
    if any(fit.get("b_simple") for fit in report["fits"]):
        ax.plot([], [], "x", color="gray", label="B_simple (noise scale)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    # The measurements set the range; the perfect-scaling lines and predictions may leave it.
    ax.set_ylim(min(drawn) / 2.0, max(drawn) * 2.0)
    ax.set_xlabel("global batch size")
    ax.set_ylabel("steps to target")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=6.5)
    ax.set_title(f"{title}\nsteps to " + ", ".join(report["targets"]), fontsize=9)


def draw(_db, args):
    reports = [r for r in args.report.split(",") if r]
    if not reports:
        raise FigureInputError("give --report A.json,B.json: one study report per panel")
    titles = args.titles.split("|") if args.titles else []
    if titles and len(titles) != len(reports):
        raise FigureInputError(f"--titles gives {len(titles)} titles for {len(reports)} panels "
                               "(separate them with |)")
    loaded = [read_study_report(path) for path in reports]
    plt, fig, axes = new_figure(len(loaded), panel_width=6.5)
    if len(loaded) == 1:
        axes = [axes]
    for i, (ax, report) in enumerate(zip(axes, loaded)):
        draw_panel(plt, ax, report, titles[i] if titles else f"study {i + 1}")
    save(plt, fig, args.out)


if __name__ == "__main__":
    main(draw, __doc__, study=True)
