#!/usr/bin/env bash
# Runs one libFuzzer target for a bounded time, from seeds cut out of real logs.
#   run_fuzzer.sh FUZZER SECONDS MAX_LEN LINES PREFIX REGRESSIONS SEED_FILE...
# Each seed file gives up to 64 seeds of LINES lines each; PREFIX is a decimal byte put before
# each seed (a fuzzer's setting), or - for none. The inputs in REGRESSIONS (past crashes) are run
# first. A crash, a leak or a timeout fails the test and leaves the input in the work directory.
set -euo pipefail
fuzzer=$1 seconds=$2 max_len=$3 lines=$4 prefix=$5 regressions=$6
shift 6

work=$(dirname "$fuzzer")/$(basename "$fuzzer").work
rm -rf "$work/seeds"
mkdir -p "$work/seeds" "$work/corpus"
for file in "$@"; do
  base=$(basename "$file")
  head -n $((lines * 64)) "$file" | split -l "$lines" -a 3 - "$work/seeds/$base."
done
if [ "$prefix" != - ]; then
  for seed in "$work"/seeds/*; do
    { printf "\\$(printf '%03o' "$prefix")"; cat "$seed"; } > "$seed.p" && mv "$seed.p" "$seed"
  done
fi
inputs=("$work/corpus" "$work/seeds")
if [ -d "$regressions" ]; then inputs+=("$regressions"); fi

echo "$(basename "$fuzzer"): $(ls "$work/seeds" | wc -l) seeds, ${seconds} s"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
exec "$fuzzer" -max_total_time="$seconds" -max_len="$max_len" -timeout=20 -rss_limit_mb=2048 \
  -print_final_stats=1 -artifact_prefix="$work/" "${inputs[@]}"
