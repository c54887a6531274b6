#!/usr/bin/env bash
# Checks one Promela model with spin and compares the verdict with what is expected.
#
#   run_spin.sh <model.pml> <pass|violation> <work-dir> [ltl-property] [-- pan flags...]
#
# Without an LTL property the verifier checks safety: assertions and invalid end states
# (deadlocks). With one, it checks that never claim for acceptance cycles under weak fairness
# (pan -a -f). "violation" means the model is expected to fail: the test passes only if spin finds
# an error, and the trail is printed so the counterexample can be read in the log.
# CC_FLAGS adds compiler flags for pan.c (e.g. -DVECTORSZ=4096); SPIN_FLAGS adds flags for spin
# itself (e.g. -DBOUNDED, which picks a variant of a model).
set -euo pipefail

model=$(realpath "$1")
expect=$2
work=$3
shift 3
ltl=""
if [ $# -gt 0 ] && [ "$1" != "--" ]; then
  ltl=$1
  shift
fi
if [ "${1:-}" = "--" ]; then shift; fi
pan_flags=("$@")

rm -rf "$work"
mkdir -p "$work"
cd "$work"
cp "$model" model.pml

# shellcheck disable=SC2086 # SPIN_FLAGS is a list of flags
spin ${SPIN_FLAGS:-} -a model.pml > spin.log
if [ -n "$ltl" ]; then
  cc -O2 -w ${CC_FLAGS:-} -o pan pan.c
  ./pan -a -f -N "$ltl" "${pan_flags[@]}" > pan.log 2>&1 || true
else
  cc -O2 -w -DSAFETY -DNOCLAIM ${CC_FLAGS:-} -o pan pan.c
  ./pan "${pan_flags[@]}" > pan.log 2>&1 || true
fi

errors=$(sed -n 's/.*errors: \([0-9][0-9]*\).*/\1/p' pan.log | tail -n 1)
if [ -z "$errors" ]; then
  echo "spin: no verdict for $(basename "$model") ${ltl:+(ltl $ltl)}"
  cat pan.log
  exit 1
fi
grep -E 'State-vector|states, stored|errors:' pan.log || true

if [ "$errors" -gt 0 ] && [ -f model.pml.trail ]; then
  echo "--- counterexample (spin -t -p) ---"
  # shellcheck disable=SC2086
  spin ${SPIN_FLAGS:-} -t -p -k model.pml.trail model.pml | tail -n 60
fi

case "$expect" in
  pass)
    if [ "$errors" -ne 0 ]; then echo "FAIL: expected no error, spin found $errors"; exit 1; fi
    if grep -q 'search not completed\|max search depth too small' pan.log; then
      echo "FAIL: the search was incomplete"; cat pan.log; exit 1
    fi
    echo "PASS: $(basename "$model") ${ltl:+ltl $ltl }holds"
    ;;
  violation)
    if [ "$errors" -eq 0 ]; then echo "FAIL: expected spin to find a violation, it found none"; exit 1; fi
    echo "PASS: spin found the expected violation in $(basename "$model") ${ltl:+(ltl $ltl)}"
    ;;
  *) echo "unknown expectation '$expect'"; exit 2 ;;
esac
