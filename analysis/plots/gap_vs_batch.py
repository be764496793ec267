"""gap-vs-batch: the generalization gap at the end of training (train_acc - test_acc, and
test_loss - train_loss, both measured in eval mode) against the global batch, one line per
series (default the optimizer), best base LR per point, error bars over seeds (Keskar et al. 2017's question)."""

from common import FigureInputError, best_lr_groups, main, mean_sd, new_figure, runs_with_finals, save


def draw(db, args):
    groups = best_lr_groups(runs_with_finals(db, args.where, args.metric, series=args.series))
    if not groups:
        raise FigureInputError("no finished run with an evaluation matches (a group with several "
                               "base LRs needs validation rows: data.val_size)")
    plt, fig, (ax_acc, ax_loss) = new_figure(2)
    for opt in sorted({k[0] for k in groups}):
        batches = sorted(b for o, b in groups if o == opt)
        for ax, field in ((ax_acc, "gap_acc"), (ax_loss, "gap_loss")):
            stats = [mean_sd([r[field] for r in groups[(opt, b)]]) for b in batches]
            pts = [(b, m, s) for b, (m, s) in zip(batches, stats) if m is not None]
            if pts:
                ax.errorbar([p[0] for p in pts], [p[1] for p in pts], yerr=[p[2] for p in pts],
                            marker="o", capsize=3, label=opt)
    for ax, title in ((ax_acc, "train acc - test acc"), (ax_loss, "test loss - train loss")):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("global batch size")
        ax.set_title(title)
        ax.axhline(0.0, color="gray", lw=0.8)
        ax.grid(True, alpha=0.3)
        ax.legend()
    save(plt, fig, args.out)


if __name__ == "__main__":
    main(draw, __doc__)
