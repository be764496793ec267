"""accuracy-vs-batch: final (or --best) test accuracy against the global batch on a log2 axis, one
line per series (--series, default the optimizer), error bars = sd over seeds; each point is the best base LR of
its (series, batch) group, selected on validation as `batchlab report` does. The LARS-versus-LAMB figure (You et al. 2017, 2020)."""

from common import FigureInputError, best_lr_groups, main, mean_sd, new_figure, runs_with_finals, save


def draw(db, args):
    groups = best_lr_groups(runs_with_finals(db, args.where, args.metric, args.best, args.series))
    if not groups:
        raise FigureInputError("no finished run with an evaluation matches (a group with several "
                               "base LRs needs validation rows: data.val_size)")
    plt, fig, ax = new_figure()
    for opt in sorted({k[0] for k in groups}):
        batches = sorted(b for o, b in groups if o == opt)
        stats = [mean_sd([r["metric"] for r in groups[(opt, b)]]) for b in batches]
        ax.errorbar(batches, [m for m, _ in stats], yerr=[s for _, s in stats], marker="o",
                    capsize=3, label=opt)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("global batch size")
    kind = "best" if args.best else "final"
    ax.set_ylabel(f"{kind} {args.metric.replace('_', ' ')}")
    ax.set_title(f"{kind} {args.metric} vs batch (base LR selected on validation, mean ± sd over seeds)")
    ax.grid(True, alpha=0.3)
    ax.legend()
    save(plt, fig, args.out)


if __name__ == "__main__":
    main(draw, __doc__)
