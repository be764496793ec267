"""lr-schedule: the learning rate actually applied at every logged step (the steps table), one line
per run (at most 12; --run or --where select), showing warmup, decay and the peak each scaling rule
gave each batch size."""

from common import FigureInputError, main, new_figure, query, run_label, runs_with_rows, save


def draw(db, args):
    runs = runs_with_rows(db, "steps", args.where, args.run,
                          order="r.optimizer, r.global_batch, t.run_id")
    if not runs:
        raise FigureInputError("no run has step rows")
    plt, fig, ax = new_figure()
    for run_id in runs:
        rows = query(db, "SELECT step, lr FROM steps WHERE run_id = ? ORDER BY step", (run_id,))
        ax.plot([r[0] for r in rows], [r[1] for r in rows], label=run_label(db, run_id))
    ax.set_xlabel("step")
    ax.set_ylabel("learning rate")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=6)
    save(plt, fig, args.out)


if __name__ == "__main__":
    main(draw, __doc__, needs_run=True)
