#!/usr/bin/env bash
# Sets up (installs what is missing, builds) and runs the whole test suite
# with ctest, then the same suite built with AddressSanitizer and
# UndefinedBehaviorSanitizer. Exits non-zero if any test fails.
#
#   scripts/test.sh              both builds
#   STRATA_NO_SANITIZE=1 scripts/test.sh   the plain build only (quicker, local use)
#   STRATA_NO_FUZZ=1 scripts/test.sh       skip the fuzz smoke (it needs clang)
#
# Last, a fuzz smoke: scripts/fuzz runs each libFuzzer target of fuzz/ for
# about 20 s (60 s in all); a crash, leak or sanitizer report fails CI.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

scripts/setup.sh
echo "== test suite (build/)"
ctest --test-dir build --output-on-failure -j "$jobs" </dev/null

if [ "${STRATA_NO_SANITIZE:-0}" != 1 ]; then
  STRATA_SANITIZE=1 scripts/setup.sh
  echo "== test suite under ASan + UBSan (build-san/)"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-san --output-on-failure -j "$jobs" -LE nosan </dev/null
fi

if [ "${STRATA_NO_FUZZ:-0}" != 1 ]; then
  echo "== fuzz smoke (build-fuzz/, 60 s in all)"
  scripts/fuzz all 60 </dev/null
fi
