#!/usr/bin/env bash
# run_nets.sh -- the nets benchmark against PyTorch on this machine.
#
# Runs bench_nets (our forward+backward and its GEMMs alone) and
# scripts/bench_torch.py (the same network in PyTorch) with the same number
# of threads, then prints one table: our time, GEMMs-only time and their
# ratio, PyTorch's time and PyTorch / ours. With more than one thread,
# PyTorch runs twice: matched (its own pool and OpenBLAS's, THREADS each:
# what a user gets from torch.set_num_threads) and at its best on this
# machine (one torch thread, OpenBLAS on THREADS), and the table shows both.
#
#   bench/run_nets.sh [BUILD_DIR] [THREADS] [REPS]    (defaults: build 1 7)
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$here/build}
threads=${2:-1}
reps=${3:-7}

if [ ! -x "$build/bench_nets" ]; then
  echo "run_nets.sh: $build/bench_nets not found; build first (cmake --build $build)" >&2
  exit 1
fi

ours=$(mktemp)
torch=$(mktemp)
best=$(mktemp)
trap 'rm -f "$ours" "$torch" "$best"' EXIT

"$build/bench_nets" --threads "$threads" --reps "$reps" | tee /dev/stderr | grep '^RESULT' >"$ours"
/usr/bin/python3 "$here/scripts/bench_torch.py" --threads "$threads" --reps "$reps" | grep '^RESULT' >"$torch"
if [ "$threads" -gt 1 ]; then
  /usr/bin/python3 "$here/scripts/bench_torch.py" --threads "$threads" --torch-threads 1 --reps "$reps" |
    grep '^RESULT' >"$best"
else
  cp "$torch" "$best"
fi

echo
echo "threads $threads, median of $reps (ms per forward+backward)"
echo
echo "| batch | hidden | strata | GEMMs only | strata/GEMMs | PyTorch matched | PyTorch best | PyTorch matched/strata | PyTorch best/strata |"
echo "|---|---|---|---|---|---|---|---|---|"
join -j1 <(awk '{print $2"x"$3, $4, $5}' "$ours" | sort) <(awk '{print $2"x"$3, $4}' "$torch" | sort) |
  join -j1 - <(awk '{print $2"x"$3, $4}' "$best" | sort) |
  sort -t x -k1,1n -k2,2n |
  awk '{split($1, bh, "x"); printf "| %s | %s | %.1f | %.1f | %.2f | %.1f | %.1f | %.2f | %.2f |\n", bh[1], bh[2], $2, $3, $2 / $3, $4, $5, $4 / $2, $5 / $2}'
