#!/usr/bin/env bash
# Runs sweep studies on a lent GPU machine for a fixed time and brings each study's database back
# under $OUT (docs/gpu.md, "Studies on the GPU"). The studies train small models (bert_tiny,
# gpt2_tiny) whose steps are launch-bound on a GPU, so several workers share the one device.
#
#   bash scripts/gpu/studies.sh --pack-data [DIR]       here, before: the text corpus the studies
#                                                       read (Debian python3.11-doc's sources, 12 MB,
#                                                       ~2.2 MB as .tar.xz) into DIR (.gpu-debs)
#   bash scripts/gpu/studies.sh [--debs DIR] [--minutes M] [--workers W] SPEC...   on the GPU machine
#   bash scripts/gpu/studies.sh --rehearse [--seconds S] SPEC...   here, on the CPU, against build/
#
# A run's device is part of its config, so of its run id and its study cell's id: a study started
# on the CPU cannot be continued on the GPU. Each SPEC runs from a copy beside it
# (sweeps/specs/.gpu-NAME.toml, git-ignored) whose [set] adds train.device = "cuda", so its
# database is the GPU's own and its stored spec says so. The copy's results path is
# $WORK/NAME.db (WORK defaults to /tmp/batchlab-studies, emptied first; its run folders go to
# $WORK/runs/SWEEP), so nothing in the tree is touched: the rehearsal runs beside a study the
# development machine may have running on the same spec. The SPECs run one after
# another until M minutes (default 9) have passed since the script started; the one running then
# gets SIGINT (its running trials are recorded as preempted and resume with the next `sweep run` of
# the same copy). Under $OUT: NAME.db per study (an SQLite backup), NAME-runs.tar.gz (the run
# folders, checkpoints of points still climbing, when under 40 MB), and studies-logs.tar.gz (each
# study's sweep log, the build log and studies.tsv: spec, exit status, seconds).
set -uo pipefail

mode=gpu
debs=.gpu-debs
minutes=9
seconds=
workers=6
specs=()
while (($#)); do
  case $1 in
    --pack-data)
      dir=${2:-.gpu-debs}
      mkdir -p "$dir"
      tar -C / -cJf "$dir/python3.11-doc-sources.tar.xz" usr/share/doc/python3.11/html/_sources
      echo "studies: $(du -h "$dir/python3.11-doc-sources.tar.xz" | cut -f1) of text corpus in $dir"
      exit 0
      ;;
    --rehearse) mode=rehearsal ;;
    --debs) debs=$2 && shift ;;
    --minutes) minutes=$2 && shift ;;
    --seconds) seconds=$2 && shift ;;
    --workers) workers=$2 && shift ;;
    -h | --help) sed -n '2,22p' "$0" && exit 0 ;;
    *) specs+=("$1") ;;
  esac
  shift
done
((${#specs[@]})) || { echo "studies: name at least one spec (sweeps/specs/NAME.toml)" >&2; exit 2; }
for spec in "${specs[@]}"; do
  [[ -f $spec ]] || { echo "studies: $spec: no such spec" >&2; exit 2; }
done

out=${OUT:-/tmp/batchlab-gpu-studies}
logs=$out/logs
mkdir -p "$logs"
work=${WORK:-/tmp/batchlab-studies}
rm -rf "$work" && mkdir -p "$work"
: >"$logs/studies.tsv"
budget=${seconds:-$((minutes * 60))}

if [[ $mode == gpu ]]; then
  build="build-gpu"
  device=cuda
  devices=$(printf '0,%.0s' $(seq "$workers"))
  devices=${devices%,}
  # shellcheck source=scripts/gpu/unpack.sh
  source scripts/gpu/unpack.sh "$debs" >"$logs/unpack.log" 2>&1
  corpus=$debs/python3.11-doc-sources.tar.xz
  if [[ ! -d /usr/share/doc/python3.11/html/_sources && -f $corpus ]]; then
    tar -C / -xJf "$corpus"
  fi
  {
    cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
      -DBATCHLAB_WERROR=OFF -DBATCHLAB_SERVE=OFF &&
      cmake --build "$build" -j"$(nproc)" --target batchlab batchlab_sentencepiece
  } >"$logs/build.log" 2>&1 || { echo "studies: build failed (logs/build.log)"; }
else
  build=${BATCHLAB_BUILD_DIR:-build}
  device=cpu
  workers=1
  devices=
fi

# The spec with train.device set in its [set] table (one is added when it has none) and its
# results in $work.
device_copy() {
  local spec=$1 copy=$2 name=$3
  local results="results = \"$work/$name.db\""
  if grep -q '^\[set\]' "$spec"; then
    sed -e "s|^results = .*|$results|" \
      -e "s/^\[set\]\$/[set]\n\"train.device\" = \"$device\"/" "$spec" >"$copy"
  else
    { sed "s|^results = .*|$results|" "$spec"; printf '\n[set]\n"train.device" = "%s"\n' "$device"; } >"$copy"
  fi
}

run_study() {
  local spec=$1 name copy sweep left rc t0=$SECONDS
  name=$(basename "$spec" .toml)
  copy=$(dirname "$spec")/.gpu-$name.toml
  device_copy "$spec" "$copy" "$name"
  sweep=$(sed -n 's/^name = "\(.*\)"$/\1/p' "$copy" | head -1)
  left=$((budget - SECONDS))
  if ((left < 10)); then
    printf '%s\tskipped: no time left\t0\n' "$name" >>"$logs/studies.tsv"
    return 0
  fi
  local flags=(--workers "$workers")
  [[ -n $devices ]] && flags+=(--devices "$devices")
  timeout -s INT -k 60 "$left" "$build"/batchlab sweep run "$copy" "${flags[@]}" \
    >"$logs/$name.log" 2>&1
  rc=$?
  printf '%s\t%s\t%s\n' "$name" "$rc" "$((SECONDS - t0))" >>"$logs/studies.tsv"
  "$build"/batchlab sweep status "$copy" >>"$logs/$name.log" 2>&1
  if [[ -f $work/$name.db ]]; then
    sqlite3 "$work/$name.db" ".backup '$out/$name.db'" &&
      sqlite3 "$out/$name.db" "PRAGMA journal_mode=DELETE" >/dev/null
  fi
  if [[ -d $work/runs/$sweep ]] && (($(du -sm "$work/runs/$sweep" | cut -f1) < 40)); then
    tar -C "$work" -czf "$out/$name-runs.tar.gz" "runs/$sweep"
  fi
  rm -f "$copy"
}

for spec in "${specs[@]}"; do run_study "$spec"; done
tar -C "$out" -czf "$out/studies-logs.tar.gz" logs && rm -rf "$logs"
echo "studies ($mode): $(tar -xzOf "$out/studies-logs.tar.gz" logs/studies.tsv | tr '\n' ' ')"
