#!/usr/bin/env bash
# The search-cost measurement of docs/sweeps.md "What the search costs": records the Fashion-MNIST
# AdamW ladder (3 seeds) as a plain stop_at_target grid, records the later seeds' extra points in a
# second plain run started from a copy of the first (nothing that already ran is trained again),
# merges those runs into the first recording, and replays every search rule from it.
#   bash scripts/studies/fmnist_ladder_cost.sh          # about 1 hour on 2 cores
# Runs from a copy of the binary (a relink under a running coordinator stops it).
set -euo pipefail
cd "$(dirname "$0")/../.."
workers=${WORKERS:-2}
bin=$(mktemp /tmp/batchlab-cost.XXXXXX)
cp build/batchlab "$bin"
trap 'rm -f "$bin"' EXIT

plain=results/fmnist_ladder_cost.db
extra=results/fmnist_ladder_cost_extra.db
"$bin" sweep run sweeps/specs/fmnist_ladder_cost.toml --workers "$workers"

# The second recording starts from the first without its later-seed cells, so its seed-0 cells are
# complete and the later seeds' cells open under later_seeds = "neighbours".
rm -f "$extra" "$extra-wal" "$extra-shm"
sqlite3 "$plain" ".backup '$extra'"
sqlite3 "$extra" "DELETE FROM study_trials WHERE cell_id IN
                    (SELECT cell_id FROM study_cells WHERE seed != 0);
                  DELETE FROM study_cells WHERE seed != 0;"
"$bin" sweep run sweeps/specs/fmnist_ladder_cost_extra.toml --workers "$workers"

# The new runs (and their evaluations) join the first recording; its study tables stay the plain
# grid's, which is what `sweep cost` counts as the plain grid.
sqlite3 "$plain" "ATTACH '$extra' AS x;
  BEGIN;
  CREATE TEMP TABLE new_runs AS SELECT run_id FROM x.runs WHERE run_id NOT IN (SELECT run_id FROM main.runs);
  INSERT INTO main.runs SELECT * FROM x.runs WHERE run_id IN (SELECT run_id FROM new_runs);
  INSERT INTO main.evals SELECT * FROM x.evals WHERE run_id IN (SELECT run_id FROM new_runs);
  COMMIT;"
build/batchlab sweep cost sweeps/specs/fmnist_ladder_cost.toml --from "$plain" --format markdown
