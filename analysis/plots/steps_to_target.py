"""steps-to-target: optimizer steps (left) and epochs (right) to reach a target against the global
batch on log-log axes, one line per series (default the optimizer), with the perfect-scaling line (steps halve when the
batch doubles) through each series' smallest batch (Shallue et al. 2019). Each point is the
base LR with the fewest mean steps among those whose every finished seed reached the target."""

from common import (FigureInputError, main, mean_sd, new_figure, query, series_columns,
                    where_clause, save)


def draw(db, args):
    targets = query(db, "SELECT DISTINCT m.metric, m.target FROM milestones m JOIN runs r "
                        "ON r.run_id = m.run_id" + where_clause(args.where) + " ORDER BY 1, 2")
    if not targets:
        raise FigureInputError("no run reached a target (train.target) in the selected runs")
    if args.target is not None:
        targets = [t for t in targets if abs(t[1] - args.target) < 1e-12]
        if not targets:
            raise FigureInputError(f"--target {args.target}: no milestone has this target")
    metric, target = targets[0]
    cols = series_columns(db, args.series)
    rows = query(db, "SELECT r.run_id, r.global_batch, r.base_lr" + "".join(f", r.{c}" for c in cols)
                     + " FROM runs r" + where_clause(args.where) + (" AND" if args.where else " WHERE")
                     + " r.status = 'done'")
    runs = [(r[0], "/".join(str(v) for v in r[3:]), r[1], r[2]) for r in rows]
    reached = {row[0]: row[1:] for row in query(
        db, "SELECT run_id, step, epoch FROM milestones WHERE metric = ? AND target = ?",
        (metric, target))}
    cells = {}
    for run_id, opt, batch, lr in runs:
        cells.setdefault((opt, batch), {}).setdefault(lr, []).append(reached.get(run_id))
    best = {}
    for key, by_lr in cells.items():
        for lr, results in by_lr.items():
            if any(r is None for r in results):
                continue  # a seed that missed the target disqualifies this LR
            steps, _ = mean_sd([r[0] for r in results])
            epochs, _ = mean_sd([r[1] for r in results])
            if key not in best or steps < best[key][0]:
                best[key] = (steps, epochs)
    if not best:
        raise FigureInputError(f"no (series, batch) reached {metric} {target:g} in every seed")
    plt, fig, (ax_steps, ax_epochs) = new_figure(2)
    for opt in sorted({k[0] for k in best}):
        batches = sorted(b for o, b in best if o == opt)
        steps = [best[(opt, b)][0] for b in batches]
        line = ax_steps.plot(batches, steps, marker="o", label=opt)[0]
        ideal = [steps[0] * batches[0] / b for b in batches]
        ax_steps.plot(batches, ideal, ls="--", color=line.get_color(), alpha=0.5)
        ax_epochs.plot(batches, [best[(opt, b)][1] for b in batches], marker="o", label=opt)
    ax_steps.plot([], [], ls="--", color="gray", label="perfect scaling")
    for ax, ylabel in ((ax_steps, "steps to target"), (ax_epochs, "epochs to target")):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("global batch size")
        ax.set_ylabel(ylabel)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.suptitle(f"time to {metric} {target:g}")
    save(plt, fig, args.out)


if __name__ == "__main__":
    main(draw, __doc__)
