"""lr-sensitivity: a scaling study's steps to target against the learning rate, one panel per fit
series (an optimizer), one line per batch size (and seed, dashed for further seeds) over the trials
of its cell; trials that did not reach the target (capped, pruned, diverged, stopped by the race)
are drawn as markers on the dotted line at the top of the panel. Narrow valleys at large batches
are the "good regions shrink" effect (Shallue et al. 2019). Reads the study report's JSON."""

from common import FigureInputError, load_study_report, main, new_figure, save

MAX_PANELS = 4


def draw_panel(ax, plt, series, cells):
    batches = sorted({c["global_batch"] for c in cells})
    cmap = plt.get_cmap("viridis")
    color = {b: cmap(i / max(len(batches) - 1, 1) * 0.9) for i, b in enumerate(batches)}
    reached_steps = [t["steps_to_target"] for c in cells for t in c["trials"]
                     if t["outcome"] == "reached" and t["steps_to_target"]]
    top = max(reached_steps) * 2.0 if reached_steps else 1.0
    seeds_of = {}
    for c in sorted(cells, key=lambda c: (c["global_batch"], c["seed"])):
        seeds_of.setdefault(c["global_batch"], []).append(c["seed"])
        first_seed = len(seeds_of[c["global_batch"]]) == 1
        trials = sorted(c["trials"], key=lambda t: t["base_lr"])
        hit = [(t["base_lr"], t["steps_to_target"]) for t in trials
               if t["outcome"] == "reached" and t["steps_to_target"]]
        miss = [t["base_lr"] for t in trials if not (t["outcome"] == "reached"
                                                      and t["steps_to_target"])]
        style = "-" if first_seed else "--"
        label = f"B={c['global_batch']}" if first_seed else None
        if hit:
            ax.plot([lr for lr, _ in hit], [s for _, s in hit], style, marker="o", ms=4,
                    color=color[c["global_batch"]], label=label)
            label = None
        if miss:
            ax.plot(miss, [top] * len(miss), "x", color=color[c["global_batch"]], label=label)
    ax.axhline(top, ls=":", color="gray", lw=1)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("base learning rate")
    ax.set_title(series, fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=6)


def draw(db, args):
    report = load_study_report(args)
    series = [f["series"] for f in report["fits"]]
    if len(series) > MAX_PANELS:
        raise FigureInputError(f"the study has {len(series)} series; this figure draws at most "
                               f"{MAX_PANELS} panels")
    if not any(c["trials"] for c in report["cells"]):
        raise FigureInputError("the study has no trials yet")
    plt, fig, axes = new_figure(len(series))
    axes = list(axes) if len(series) > 1 else [axes]
    for ax, name in zip(axes, series):
        draw_panel(ax, plt, name, [c for c in report["cells"] if c["series"] == name])
    axes[0].set_ylabel("steps to target (x: not reached, at the top)")
    fig.suptitle("steps to " + ", ".join(report["targets"]) + " against the learning rate")
    save(plt, fig, args.out)


if __name__ == "__main__":
    main(draw, __doc__, study=True)
