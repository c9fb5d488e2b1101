#!/usr/bin/env bash
# Golden answers: runs scripts/golden.sh with the built strata and compares
# the answers kept in tests/golden/ byte for byte. They were written by the
# program before the module refactor of issue 14; a change of any plan, cost
# or figure in them fails this test. When a change of answer is intended,
# regenerate them with scripts/golden.sh and say why in the commit.
#
#   tests/golden_check.sh STRATA_BIN
set -euo pipefail
bin=${1:?usage: golden_check.sh STRATA_BIN}
src=$(cd "$(dirname "$0")/.." && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$src/scripts/golden.sh" "$bin" "$out" >/dev/null
fail=0
for want in "$src"/tests/golden/*; do
  name=$(basename "$want")
  case $name in
    eval-quick.results.csv) got=$out/eval-quick/results.csv ;;
    *) got=$out/$name ;;
  esac
  if ! cmp -s "$want" "$got"; then
    echo "golden: $name differs"; diff "$want" "$got" | head -20; fail=1
  fi
done
n=$(ls "$src"/tests/golden | wc -l)
if [ $fail = 0 ]; then echo "$n passed, 0 failed"; else echo "golden: some of $n answers differ"; fi
exit $fail
