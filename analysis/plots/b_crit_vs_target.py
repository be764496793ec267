"""b-crit-vs-target: the critical batch against the depth of the target (issue 46). The study
report's target ladder (analysis/target_ladder.h): the same trials' evaluations read at shallower
targets and every series refitted. One line per series: B_crit = E_min/S_min with its 95% interval
over the seeds (bars; none with fewer than 3 seeds a batch), and the 20%-over-linear-scaling batch
from the measured steps (dashed, open squares). The x axis runs from the shallowest target to the
final one, so a curve rising to the right is a critical batch that grows as the target deepens
(McCandlish et al. 2018). The rates were searched for the final target: the shallow rungs use rates
chosen for a deeper one, which the title says. A rung where a series reached at fewer than 3 batches
is left out (a curve through two points has no spread to show)."""

from common import FigureInputError, load_study_report, main, new_figure, save


def draw(_db, args):
    report = load_study_report(args)
    rungs = report.get("target_ladder") or []
    if not rungs:
        raise FigureInputError("the study report has no target ladder (a database without evals "
                               "rows, or cells with several targets)")
    plt, fig, ax = new_figure(1)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    series = [f["series"] for f in rungs[0]["fits"]]
    drawn = 0
    for i, name in enumerate(series):
        xs, ys, low, high, xm, ym = [], [], [], [], [], []
        for rung in rungs:
            fit = next((f for f in rung["fits"] if f["series"] == name), None)
            # A curve through two batches passes through both: no critical batch worth drawing.
            if not fit or not fit.get("b_crit") or fit.get("batches", 0) < 3:
                continue
            xs.append(rung["target"])
            ys.append(fit["b_crit"])
            interval = fit.get("b_crit_interval")
            low.append(fit["b_crit"] - interval[0] if interval else 0.0)
            top = interval[1] if interval and interval[1] is not None else fit["b_crit"]
            high.append(top - fit["b_crit"])
            if fit.get("measured_excess"):
                xm.append(rung["target"])
                ym.append(fit["measured_excess"])
        if len(xs) < 2:
            continue  # a series fitted at one rung at most draws no line
        color = colors[i % len(colors)]
        ax.errorbar(xs, ys, yerr=[low, high], fmt="o-", color=color, ms=4, capsize=2, lw=1.2,
                    label=f"{name}: E_min/S_min (95% over seeds)")
        if xm:
            ax.plot(xm, ym, "s--", mfc="none", color=color, ms=4, lw=0.8,
                    label=f"{name}: 20% over linear, measured")
        drawn += 1
    if not drawn:
        raise FigureInputError("no series has a critical batch at two or more targets")
    metric = rungs[0]["metric"]
    ax.set_yscale("log", base=2)
    if "loss" in metric:
        ax.invert_xaxis()  # deeper (lower) losses to the right
    ax.set_xlabel(f"target {metric} (final target {rungs[0]['target']:g})")
    ax.set_ylabel("critical batch")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=6.5)
    ax.set_title("critical batch against the target; rates searched for the final target only",
                 fontsize=9)
    save(plt, fig, args.out)


if __name__ == "__main__":
    main(draw, __doc__, study=True)
