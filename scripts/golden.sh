#!/usr/bin/env bash
# Writes the --json answers of every shipped config to one folder, one file
# per command, so that two builds can be compared byte for byte:
#
#   scripts/golden.sh BIN OUTDIR
#   diff -r OUTDIR_BEFORE OUTDIR_AFTER
#
# Covers check, cost, solve (every method, fixed seeds), place (every
# placer), solve with the shipped policy, and eval configs/eval/quick.yaml.
# The exit status of each command is written beside its output, so a
# refusal is compared too. tests/golden/ holds a few of these answers;
# tests/test_golden.sh checks them on every run of the suite.
set -uo pipefail
bin=${1:?usage: golden.sh BIN OUTDIR}
out=${2:?usage: golden.sh BIN OUTDIR}
cd "$(dirname "$0")/.."
mkdir -p "$out"

run() { # NAME CMD...
  local name=$1; shift
  "$@" >"$out/$name.json" 2>"$out/$name.err"
  echo $? >"$out/$name.rc"
}

configs=(configs/default.yaml configs/train/eval/*.yaml)
for c in "${configs[@]}"; do
  n=$(basename "$c" .yaml)
  run "$n.check" "$bin" check "$c"
  run "$n.cost-A100" "$bin" cost "$c" --assign A100 --json
  run "$n.cost-CPU" "$bin" cost "$c" --assign CPU --json
  for m in exact homogeneous rule greedy random genetic anneal; do
    run "$n.solve-$m" "$bin" solve "$c" --method "$m" --seed 7 --evals 2000 --json
  done
  run "$n.place-all" "$bin" place "$c" --method all --plan-method exact --json
  run "$n.policy" "$bin" solve "$c" --method policy --policy checkpoints/general.h5 --json
  run "$n.policy-s8" "$bin" solve "$c" --method policy --policy checkpoints/general.h5 --samples 8 --seed 3 --json
done
for c in tests/data/multi/*.yaml; do
  n=multi-$(basename "$c" .yaml)
  for m in sequential smd; do
    run "$n.solve-$m" "$bin" solve "$c" --method "$m" --json
  done
done
rm -rf "$out/eval-quick"
run eval-quick "$bin" eval configs/eval/quick.yaml --out "$out/eval-quick" --no-times --quiet
# drop the absolute output path from eval's answer so two folders compare
for f in "$out"/eval-quick.json "$out"/eval-quick.err "$out"/eval-quick/*.csv "$out"/eval-quick/*.md; do
  [ -f "$f" ] && sed -i "s#$out#OUT#g" "$f"
done
# wall-clock figures differ from run to run: drop them
sed -i -E '/"(seconds|ms|elapsed)": /d' "$out"/*.json
rm -f "$out"/eval-quick/*.png "$out"/eval-quick/*.gp "$out"/eval-quick/*.dat 2>/dev/null
exit 0
