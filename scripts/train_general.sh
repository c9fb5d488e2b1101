#!/usr/bin/env bash
# Trains the shipped general policy, checkpoints/general.h5, in at most 30
# minutes (wall clock) on the machine it runs on (made on 2 cores):
#
#   1. configs/train/general.yaml, at most 24 minutes (6000 steps): the plan
#      (TYPE) head, REINFORCE with the shared baseline plus demonstrations of
#      the exact plans, on random jobs and clusters from configs/train/gen.yaml,
#      with the learning rate and entropy bonus decayed to the end (last.h5).
#   2. configs/train/general-place.yaml, 6 minutes, resumed from that last.h5
#      with the plan head frozen: the node head learns to place the tasks.
#
# Then it prints the held-out figures (the shipped jobs of configs/train/eval/,
# never drawn in training): the gap of each to the exact optimum, greedy and
# best of 16 samples. Usage:
#
#   scripts/train_general.sh            # build/ must hold the strata binary
#   STRATA_BUILD_DIR=build-x OUT=runs/x scripts/train_general.sh
#   NO_INSTALL=1 ...                    # leave checkpoints/general.h5 alone
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${STRATA_BUILD_DIR:-build}/strata
OUT=${OUT:-runs/general}
[ -x "$BIN" ] || { echo "train_general: $BIN not found; build first (scripts/setup.sh)" >&2; exit 2; }

# One BLAS thread: the GEMMs are a few hundred rows; on 2 cores OpenBLAS's
# own threads cost more in spinning than they save (measured: 6.1 s vs 9.5 s
# for the same 60 search steps), and the environments use both cores anyway.
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
start=$(date +%s)
# --overwrite: a re-run replaces the earlier run in $OUT (the place phase
# resumes from its last.h5, which --resume allows into any folder)
"$BIN" train configs/train/general.yaml --out "$OUT" --overwrite
"$BIN" train configs/train/general-place.yaml --resume "$OUT/last.h5" --out "$OUT/place"
echo "train_general: trained in $(( $(date +%s) - start )) s"

if [ "${NO_INSTALL:-0}" != 1 ]; then
  mkdir -p checkpoints
  cp "$OUT/place/last.h5" checkpoints/general.h5
  cp "$OUT/metrics.csv" checkpoints/general-metrics.csv
  echo "train_general: installed checkpoints/general.h5"
fi
scripts/eval_policy.sh "${NO_INSTALL:+$OUT/place/last.h5}"
