"""steps-vs-batch: a scaling study's steps to target against the global batch on log-log axes
(Shallue et al. 2019; McCandlish et al. 2018), one colour per fit series (an optimizer): the
measured cells (filled; every seed is a point), censored cells as open markers at their cap with an
arrow up (the target was not reached within it), the perfect-scaling line through the smallest
batch's point (steps halve when the batch doubles), the fitted S(B) = S_min + E_min/B (solid) and
the curve the noise scale predicts, S_min (1 + B_simple/B) (dotted). The numbers come from the study
report's JSON, so the fit drawn is the report's."""

from common import FigureInputError, geometric, load_study_report, main, new_figure, save


def draw_series(ax, color, series, cells, fit):
    reached = sorted((c["global_batch"], c["steps_to_target"]) for c in cells
                     if c["status"] == "reached" and c["steps_to_target"])
    censored = sorted((c["global_batch"], c["cap_steps"]) for c in cells
                      if c["status"] == "censored")
    batches = [b for b, _ in reached] + [b for b, _ in censored]
    if not batches:
        return
    curve_b = geometric(min(batches), max(batches))
    if reached:
        ax.plot([b for b, _ in reached], [s for _, s in reached], "o", color=color,
                label=f"{series}: measured")
        b0, s0 = reached[0]
        ax.plot(curve_b, [s0 * b0 / b for b in curve_b], "--", color=color, alpha=0.4, lw=1)
    for b, cap in censored:
        ax.plot([b], [cap], "o", mfc="none", color=color)
        ax.annotate("", xy=(b, cap * 1.6), xytext=(b, cap),
                    arrowprops=dict(arrowstyle="->", color=color, lw=1.2))
    params = fit.get("fit")
    if params:
        s_min, e_min = params["s_min"], params["e_min"]
        label = f"{series}: fit"
        if params.get("b_crit"):
            se = params.get("b_crit_se")
            label += f", B_crit = {params['b_crit']:.0f}" + (f" ± {se:.0f}" if se else "")
        ax.plot(curve_b, [s_min + e_min / b for b in curve_b], "-", color=color, label=label)
        if fit.get("b_simple") and s_min > 0:
            bs = fit["b_simple"]
            ax.plot(curve_b, [s_min * (1 + bs / b) for b in curve_b], ":", color=color, lw=1.5,
                    label=f"{series}: from B_simple = {bs:.0f}")


def draw(db, args):
    report = load_study_report(args)
    plt, fig, ax = new_figure(1)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, fit in enumerate(report["fits"]):
        cells = [c for c in report["cells"] if c["series"] == fit["series"]]
        draw_series(ax, colors[i % len(colors)], fit["series"], cells, fit)
    if not ax.lines:
        raise FigureInputError("no cell of the study has reached its target or been censored yet")
    ax.plot([], [], "--", color="gray", alpha=0.4, label="perfect scaling")
    ax.plot([], [], "o", mfc="none", color="gray", label="censored (at the cap)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("global batch size")
    ax.set_ylabel("steps to target")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    ax.set_title("steps to " + ", ".join(report["targets"]))
    save(plt, fig, args.out)


if __name__ == "__main__":
    main(draw, __doc__, study=True)
