"""noise-scale: the simple gradient noise scale B_simple = tr(Sigma) / |G|^2 over training
(McCandlish et al. 2018: the batch size beyond which larger batches stop paying off), one line per
run that measured it (train.noise_scale), with the global batch sizes of the selected runs marked
as horizontal lines."""

from common import (FigureInputError, main, new_figure, query, run_label, runs_with_rows, save,
                    where_clause)


def draw(db, args):
    runs = runs_with_rows(db, "noise_scale", args.where, args.run)
    if not runs:
        raise FigureInputError("no run has gradient noise scale rows (train.noise_scale = true)")
    plt, fig, ax = new_figure()
    plotted = 0
    for run_id in runs:
        rows = query(db, "SELECT step, b_simple FROM noise_scale WHERE run_id = ? AND b_simple > 0 "
                         "ORDER BY step", (run_id,))
        if rows:
            ax.plot([r[0] for r in rows], [r[1] for r in rows], label=run_label(db, run_id))
            plotted += 1
    if plotted == 0:
        raise FigureInputError("the noise scale rows have no positive B_simple yet")
    batches = sorted({r[0] for r in query(db, "SELECT DISTINCT r.global_batch FROM runs r"
                                              + where_clause(args.where)) if r[0]})
    for b in batches:
        ax.axhline(b, color="gray", ls=":", lw=0.8)
        ax.annotate(f"batch {b}", (0.01, b), xycoords=("axes fraction", "data"), fontsize=7,
                    color="gray")
    ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel("B_simple")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=6)
    save(plt, fig, args.out)


if __name__ == "__main__":
    main(draw, __doc__, needs_run=True)
