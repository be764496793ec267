#!/usr/bin/env bash
# The committed outputs of the text study (docs/reproductions.md "The text study past the plateau"),
# written from its database alone: the study report, the `compare` outputs its verdicts quote, and
# the panels figure.
#   bash scripts/studies/text_scaling_study_outputs.sh [STUDY.db]   # default docs/data/text_scaling_study.db
# Writes docs/data/text_scaling_study/{report.md,compare_*.md},
# docs/figures/text_scaling_study_panels.png and docs/figures/text_scaling_study_b_crit_vs_target.png.
# Needs build/batchlab (or the binary named by BATCHLAB).
set -euo pipefail
cd "$(dirname "$0")/../.."
db=${1:-docs/data/text_scaling_study.db}
out=docs/data/text_scaling_study
bin=${BATCHLAB:-build/batchlab}
[ -f "$db" ] || { echo "error: $db: no such database (give the study's database)" >&2; exit 2; }
[ -x "$bin" ] || { echo "error: $bin: not built (bash scripts/build.sh batchlab)" >&2; exit 2; }
mkdir -p "$out" docs/figures

"$bin" report --db "$db" --format markdown > "$out/report.md"

# The LARS lines as the report names them since the always_adapt axis (issue 43 item 5).
lars3="lars optim.always_adapt=false, optim.trust_coefficient=0.001"
lars2="lars optim.always_adapt=false, optim.trust_coefficient=0.01"
larsa="lars optim.always_adapt=true, optim.trust_coefficient=0.001"
# A B file: the pairs docs/reproductions.md quotes.
pairs=(
  "lamb|adamw|compare_lamb_adamw.md"
  "lamb|nesterov|compare_lamb_nesterov.md"
  "adamw|nesterov|compare_adamw_nesterov.md"
  "$lars3|lamb|compare_lars0.001_lamb.md"
  "$lars2|lamb|compare_lars0.01_lamb.md"
  "$lars3|nesterov|compare_lars0.001_nesterov.md"
  "$lars2|nesterov|compare_lars0.01_nesterov.md"
  "$lars2|$lars3|compare_lars0.01_lars0.001.md"
  "$larsa|lamb|compare_lars_always_adapt_lamb.md"
  "$larsa|$lars3|compare_lars_always_adapt_lars0.001.md"
)
for pair in "${pairs[@]}"; do
  IFS='|' read -r a b file <<<"$pair"
  {
    echo "\`batchlab compare --db $db \"$a\" \"$b\" --format markdown\`"
    echo
    "$bin" compare --db "$db" "$a" "$b" --format markdown
  } > "$out/$file"
done

"$bin" plot --db "$db" --figure scaling-panels --out docs/figures/text_scaling_study_panels.png \
  --titles "text study: bert_tiny MLM on the Python 3.11 docs, 3 seeds"
"$bin" plot --db "$db" --figure b-crit-vs-target \
  --out docs/figures/text_scaling_study_b_crit_vs_target.png
echo "wrote $out/report.md, ${#pairs[@]} comparisons in $out/, docs/figures/text_scaling_study_panels.png," \
  "docs/figures/text_scaling_study_b_crit_vs_target.png"
