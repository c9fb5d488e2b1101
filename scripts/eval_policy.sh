#!/usr/bin/env bash
# Gap to the exact optimum of a trained policy on the held-out shipped jobs
# (configs/train/eval/): greedy decoding and the best of 16 samples.
#
#   scripts/eval_policy.sh [CKPT]       # default checkpoints/general.h5
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${STRATA_BUILD_DIR:-build}/strata
CKPT=${1:-checkpoints/general.h5}
[ -n "$CKPT" ] || CKPT=checkpoints/general.h5
cost() { # FILE ARGS... -> the plan's cost, or "none"
  local out
  out=$("$BIN" solve "$@" 2>/dev/null | sed -n 's/.*, cost \$\([0-9.e+-]*\)$/\1/p' | tail -1)
  echo "${out:-none}"
}
printf '%-28s %12s %12s %12s\n' job exact greedy best-of-16
n=0; sg=0; ss=0
for f in configs/train/eval/*.yaml; do
  e=$(cost "$f" --method exact)
  g=$(cost "$f" --method policy --policy "$CKPT")
  s=$(cost "$f" --method policy --policy "$CKPT" --samples 16)
  read -r gg sgap < <(awk -v e="$e" -v g="$g" -v s="$s" 'BEGIN {
      a = (g == "none") ? "none" : sprintf("%+.2f%%", 100 * (g / e - 1));
      b = (s == "none") ? "none" : sprintf("%+.2f%%", 100 * (s / e - 1));
      print a, b }')
  printf '%-28s %12s %12s %12s\n' "$(basename "$f" .yaml)" "$e" "$gg" "$sgap"
  n=$((n + 1))
  sg=$(awk -v a="$sg" -v e="$e" -v g="$g" 'BEGIN { print (g == "none") ? a + 4 : a + g / e - 1 }')
  ss=$(awk -v a="$ss" -v e="$e" -v s="$s" 'BEGIN { print (s == "none") ? a + 4 : a + s / e - 1 }')
done
awk -v n="$n" -v a="$sg" -v b="$ss" 'BEGIN { printf "mean gap over %d held-out jobs: greedy %.2f%%, best of 16 %.2f%%\n", n, 100 * a / n, 100 * b / n }'
echo "policy: $CKPT"
