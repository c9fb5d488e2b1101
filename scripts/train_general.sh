#!/usr/bin/env bash
# Trains the general policy. Two families:
#
#   scripts/train_general.sh            the shipped checkpoints/general.h5, in at
#                                       most 30 minutes on 2 cores:
#     1. configs/train/general.yaml, at most 24 minutes (6000 steps): the plan
#        (TYPE) head, REINFORCE with the shared baseline plus demonstrations of
#        the exact plans, on random jobs and clusters from configs/train/gen.yaml,
#        with the learning rate and entropy bonus decayed to the end (last.h5).
#     2. configs/train/general-place.yaml, 6 minutes, resumed from that last.h5
#        with the plan head frozen: the node head learns to place the tasks.
#     Then it prints the held-out figures (the shipped jobs of
#     configs/train/eval/, never drawn in training): the gap of each to the
#     exact optimum, greedy and best of 16 samples.
#
#   scripts/train_general.sh wide       the long run on the wide family (issue
#                                       #15; hours): configs/train/general-wide.yaml
#     (gen-wide.yaml: 1-64 layers, 2-8 types, curriculum over size, a larger
#     network), then general-wide-place.yaml, then the banded evaluation
#     configs/eval/q8-general-bands.yaml on the result (its summary.md has
#     the table by size band). The shipped checkpoint is replaced only with
#     INSTALL=1, meant for a result better than it on every band.
#
#   scripts/train_general.sh zone       the node-head phase that made the
#                                       installed policy (gym schema 2's zone
#     features): configs/train/general-zone-place.yaml resumes START (plan
#     head frozen; REINFORCE, ratio reward, gen.yaml; steps 15,208 to 17,675,
#     about 25 minutes on 2 cores), then the banded evaluation as for wide, of
#     the run's average.h5 (the mean of its weights, which is what was
#     installed). START defaults to checkpoints/general.h5; the step-15,208
#     policy the installed one came from is in git:
#       git show 6fdde83:checkpoints/general.h5 > start.h5
#       START=start.h5 scripts/train_general.sh zone
#
#   scripts/train_general.sh warm       the shipped policy trained on: resumes
#                                       checkpoints/general.h5 (its network)
#     with configs/train/general-wide-warm.yaml (gen-wide-full.yaml: the wide
#     family without a curriculum; batches reused over 4 steps), then
#     general-wide-warm-place.yaml, then the banded evaluation as for wide.
#
# Environment:
#   STRATA_BUILD_DIR=build-x            where the strata binary is (default build)
#   OUT=runs/x                          run folder (default runs/general[-wide])
#   NP=4                                ranks: run training under `mpirun -np 4`
#                                       (the build must have found OpenMPI;
#                                       MPIRUN_FLAGS adds flags, e.g. as root
#                                       "--allow-run-as-root --oversubscribe")
#   SECONDS_PLAN=300 SECONDS_PLACE=60   cap each phase, in seconds (a smoke run)
#   NO_INSTALL=1                        leave checkpoints/general.h5 alone (narrow)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${STRATA_BUILD_DIR:-build}/strata
FAMILY=${1:-narrow}
case "$FAMILY" in
  narrow) PLAN=configs/train/general.yaml; PLACE=configs/train/general-place.yaml
          OUT=${OUT:-runs/general} ;;
  wide)   PLAN=configs/train/general-wide.yaml; PLACE=configs/train/general-wide-place.yaml
          OUT=${OUT:-runs/general-wide} ;;
  warm)   PLAN=configs/train/general-wide-warm.yaml; PLACE=configs/train/general-wide-warm-place.yaml
          OUT=${OUT:-runs/general-wide-warm} ;;
  zone)   PLAN=""; PLACE=configs/train/general-zone-place.yaml
          OUT=${OUT:-runs/general-zone} ;;
  *) echo "usage: scripts/train_general.sh [narrow|wide|warm|zone]" >&2; exit 2 ;;
esac
[ -x "$BIN" ] || { echo "train_general: $BIN not found; build first (scripts/setup.sh)" >&2; exit 2; }

# One BLAS thread: the GEMMs are a few hundred rows; on 2 cores OpenBLAS's
# own threads cost more in spinning than they save (measured: 6.1 s vs 9.5 s
# for the same 60 search steps), and the environments use both cores anyway.
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
RUN=("$BIN")
if [ "${NP:-1}" -gt 1 ]; then
  # shellcheck disable=SC2206
  RUN=(mpirun -np "$NP" ${MPIRUN_FLAGS:-} "$BIN")
fi
plan_args=(); place_args=()
[ -n "${SECONDS_PLAN:-}" ] && plan_args=(--seconds "$SECONDS_PLAN")
[ -n "${SECONDS_PLACE:-}" ] && place_args=(--seconds "$SECONDS_PLACE")
start=$(date +%s)
# --overwrite: a re-run replaces the earlier run in $OUT (the place phase
# resumes from its last.h5, which --resume allows into any folder)
if [ "$FAMILY" = zone ]; then
  # the node head alone, from the shipped policy
  mkdir -p "$OUT"
  cp "${START:-checkpoints/general.h5}" "$OUT/start.h5"
  "${RUN[@]}" train "$PLACE" --resume "$OUT/start.h5" --out "$OUT/place" "${place_args[@]}"
  cp "$OUT/place/metrics.csv" "$OUT/metrics.csv"
elif [ "$FAMILY" = warm ]; then
  # the shipped network and its step go on (the folder's earlier files are
  # replaced: --resume writes into any folder)
  mkdir -p "$OUT"
  cp checkpoints/general.h5 "$OUT/start.h5"
  "${RUN[@]}" train "$PLAN" --resume "$OUT/start.h5" --out "$OUT" "${plan_args[@]}"
else
  "${RUN[@]}" train "$PLAN" --out "$OUT" --overwrite "${plan_args[@]}"
fi
[ "$FAMILY" = zone ] || "${RUN[@]}" train "$PLACE" --resume "$OUT/last.h5" --out "$OUT/place" "${place_args[@]}"
echo "train_general: trained in $(( $(date +%s) - start )) s"

if [ "$FAMILY" != narrow ]; then
  # the banded evaluation of the new policy: q8's config with its checkpoint
  mkdir -p "$OUT/eval"
  # the run's result: the mean of its weights when it kept one (average_every)
  result="$OUT/place/last.h5"
  [ -f "$OUT/place/average.h5" ] && result="$OUT/place/average.h5"
  ckpt=$(realpath "$result")
  sed "s|../../checkpoints/general.h5|$ckpt|" \
    configs/eval/q8-general-bands.yaml > "$OUT/eval/q8-general-bands.yaml"
  "$BIN" eval "$OUT/eval/q8-general-bands.yaml" --out "$OUT/eval/q8" --quiet
  sed -n '/^## By size band/,/^## Cost/p' "$OUT/eval/q8/summary.md" | sed '$d'
  if [ "${INSTALL:-0}" = 1 ]; then
    cp "$result" checkpoints/general.h5
    cp "$OUT/metrics.csv" checkpoints/general-metrics.csv
    echo "train_general: installed checkpoints/general.h5"
  fi
  exit 0
fi
if [ "${NO_INSTALL:-0}" != 1 ]; then
  mkdir -p checkpoints
  cp "$OUT/place/last.h5" checkpoints/general.h5
  cp "$OUT/metrics.csv" checkpoints/general-metrics.csv
  echo "train_general: installed checkpoints/general.h5"
fi
scripts/eval_policy.sh "${NO_INSTALL:+$OUT/place/last.h5}"
