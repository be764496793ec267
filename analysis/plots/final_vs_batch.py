"""final-vs-batch: a fixed-budget search's final metrics against the global batch (the LAMB
paper's protocol: the same epochs at every batch, the rate, warmup and each optimizer's knobs
tuned per batch): test loss (left) and test accuracy (right) per series, every seed a small
marker, the mean with its interval over the seeds (95% Student's t from 3 seeds; the seeds' range
with 2). The numbers are the fixed-budget report's JSON (`batchlab report --format json`)."""

import json

from common import FigureInputError, main, new_figure, save


def load_budget_report(args):
    if not args.report:
        raise FigureInputError("give --report FILE, the report written by `batchlab report --db DB "
                               "--format json > FILE` (batchlab plot does this itself)")
    try:
        with open(args.report, encoding="utf-8") as f:
            report = json.load(f)
    except (OSError, ValueError) as e:
        raise FigureInputError(f"--report {args.report}: {e}")
    if report.get("kind") != "fixed_budget_search":
        raise FigureInputError(f"--report {args.report}: not a fixed-budget search's report")
    return report


def draw_metric(ax, color, series, key):
    xs, means, lows, highs = [], [], [], []
    for b in series["batches"]:
        for s in b["seeds"]:
            if s.get(key) is not None:
                ax.plot([b["batch"]], [s[key]], ".", color=color, alpha=0.35, ms=5)
        interval = b.get(key)
        if not interval:
            continue
        xs.append(b["batch"])
        means.append(interval["mean"])
        lows.append(interval["mean"] - (interval["low"] if interval["low"] is not None
                                         else interval["mean"]))
        highs.append((interval["high"] if interval["high"] is not None else interval["mean"])
                     - interval["mean"])
    if xs:
        ax.errorbar(xs, means, yerr=[lows, highs], fmt="o-", color=color, capsize=3,
                    label=series["series"])


def budget_text(report):
    """The budget as a person writes it: "1.00 epoch (51,200 samples) at every batch". A budget in
    samples has its epochs from the runs (0.997195 where the split holds 51,343 samples), so the
    epochs are rounded to 2 decimals before they are compared; "fixed budget" when the batches
    differ in both."""
    batches = [b for s in report["series"] for b in s["batches"]]
    epochs = {round(b["epochs"], 2) for b in batches if b.get("epochs") is not None}
    samples = {b["budget_steps"] * b["batch"] for b in batches if b.get("budget_steps")}
    parts = []
    if len(epochs) == 1:
        e = epochs.pop()
        parts.append(f"{e:.2f} epoch{'' if e == 1 else 's'}")
    if len(samples) == 1:
        parts.append(f"{samples.pop():,} samples")
    if not parts:
        return "fixed budget"
    return (parts[0] if len(parts) == 1 else f"{parts[0]} ({parts[1]})") + " at every batch"


def draw(db, args):
    report = load_budget_report(args)
    plt, fig, axes = new_figure(2, panel_width=5.0)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, series in enumerate(report["series"]):
        for ax, key in zip(axes, ("test_loss", "test_acc")):
            draw_metric(ax, colors[i % len(colors)], series, key)
    if not axes[0].lines:
        raise FigureInputError("no cell of the search has finished its budget yet")
    budget = budget_text(report)
    for ax, label in zip(axes, ("final test loss", "final test accuracy")):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("global batch size")
        ax.set_ylabel(label)
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle(f"tuned per batch, {budget}; bars: 95% over seeds (range with 2)", fontsize=9)
    save(plt, fig, args.out)


if __name__ == "__main__":
    main(draw, __doc__, study=True)
