"""layer-ratios: for one run, a heat map of log10(||w|| / ||g||) per layer over training (the LARS
paper's observation that this ratio varies by orders of magnitude between layers), and, for LARS and
LAMB runs, the trust ratio each layer got. --run picks the run (id prefix); by default the run with
the most layer statistics."""

import math

from common import FigureInputError, main, new_figure, pick_run, query, run_label, save


def draw(db, args):
    run_id = pick_run(db, args.run, "layer_stats", args.where)
    rows = query(db, "SELECT step, layer, ratio, trust_ratio FROM layer_stats WHERE run_id = ? "
                     "ORDER BY step", (run_id,))
    if not rows:
        raise FigureInputError(f"run {run_id}: no layer statistics (train.layer_stats_every)")
    steps = sorted({r[0] for r in rows})
    layers = []
    for r in rows:
        if r[1] not in layers:
            layers.append(r[1])
    col = {s: i for i, s in enumerate(steps)}
    row_of = {name: i for i, name in enumerate(layers)}
    nan = float("nan")
    ratio = [[nan] * len(steps) for _ in layers]
    trust = [[nan] * len(steps) for _ in layers]
    has_trust = False
    for step, layer, r, t in rows:
        if r is not None and r > 0 and math.isfinite(r):
            ratio[row_of[layer]][col[step]] = math.log10(r)
        if t is not None:
            trust[row_of[layer]][col[step]] = t
            has_trust = True
    plt, fig, axes = new_figure(2 if has_trust else 1)
    axes = axes if has_trust else [axes]
    panels = [(axes[0], ratio, "log10 ||w|| / ||g||")]
    if has_trust:
        panels.append((axes[1], trust, "trust ratio"))
    for ax, data, title in panels:
        im = ax.imshow(data, aspect="auto", interpolation="nearest", cmap="viridis",
                       extent=(steps[0] - 0.5, steps[-1] + 0.5, len(layers) - 0.5, -0.5))
        fig.colorbar(im, ax=ax)
        ax.set_title(title)
        ax.set_xlabel("step")
    axes[0].set_yticks(range(len(layers)))
    axes[0].set_yticklabels(layers, fontsize=max(3, min(8, int(300 / max(1, len(layers))))))
    if has_trust:
        axes[1].set_yticks([])
    fig.suptitle(run_label(db, run_id), fontsize=9)
    save(plt, fig, args.out)


if __name__ == "__main__":
    main(draw, __doc__, needs_run=True)
