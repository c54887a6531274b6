#!/usr/bin/env bash
# End-to-end throughput of `log-ingest run` on generated logs, against `wc -l` on the same files.
#
#   bench/log_ingest_bench.sh [--size 1GiB] [--runs 5] [--big 5GiB] [--work DIR]
#
# Needs the release build (cmake --workflow --preset release). For each of the combined and the
# JSON-lines format it generates a file of --size with the app's generator (fixed seed), warms the
# page cache, then reports the median of --runs runs of:
#   - wc -l (the machine's raw read speed from page cache);
#   - log-ingest run with the default workers (one per core) and with --workers 1: parse, filter
#     nothing, aggregate, write the records and the summary to /dev/null;
# with MB/s, lines/s, peak RSS, and the ratios. With --big, it also runs a file of that size once
# and reports its peak RSS, to show that memory does not grow with the input.
set -euo pipefail
cd "$(dirname "$0")/.."

size=1GiB runs=5 big="" work=${TMPDIR:-/tmp}/conveyor-log-ingest-bench
while [ $# -gt 0 ]; do
  case $1 in
    --size) size=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --big) big=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    *) echo "usage: $0 [--size SIZE] [--runs N] [--big SIZE] [--work DIR]" >&2; exit 2 ;;
  esac
done
app=build/release/apps/log-ingest/log-ingest
[ -x "$app" ] || { echo "$app not built: cmake --workflow --preset release" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "/usr/bin/time missing: cmake/install-deps.sh installs it" >&2; exit 1; }
mkdir -p "$work"

# Runs a command `runs` times; prints "median_seconds peak_rss_kib" (the RSS of the median run).
# Wall time from the shell's microsecond clock; peak RSS from GNU time.
measure() {
  local n=$1
  shift
  for _ in $(seq "$n"); do
    local start=$EPOCHREALTIME
    /usr/bin/time -f '%M' -o "$work/time.txt" "$@" > /dev/null
    local end=$EPOCHREALTIME
    echo "$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.4f", b - a }') $(cat "$work/time.txt")"
  done | sort -n | awk '{ t[NR] = $1; m[NR] = $2 } END { i = int((NR + 1) / 2); print t[i], m[i] }'
}

# The log-ingest command for a file and a number of workers (0: one per core).
ingest() {
  echo "$app" run --input "$1" --workers "$2" --output /dev/null --summary /dev/null \
    --dead-letter /dev/null --quiet
}

printf '%s\n' "machine: $(nproc) cores, $(uname -r), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
printf '| format | measure | seconds (median of %s) | MB/s | lines/s | peak RSS (MiB) | ratio |\n' "$runs"
printf '| --- | --- | --- | --- | --- | --- | --- |\n'
for format in combined json; do
  file=$work/$format-$size.log
  [ -s "$file" ] || "$app" generate --format "$format" --size "$size" --seed 42 -o "$file"
  bytes=$(stat -L -c %s "$file")
  cat "$file" > /dev/null  # into the page cache
  lines=$(wc -l < "$file")
  read -r wc_s wc_rss <<< "$(measure "$runs" wc -l "$file")"
  read -r all_s all_rss <<< "$(measure "$runs" $(ingest "$file" 0))"
  read -r one_s one_rss <<< "$(measure "$runs" $(ingest "$file" 1))"
  row() {  # label seconds rss ratio
    awk -v f="$format" -v l="$1" -v s="$2" -v r="$3" -v b="$bytes" -v n="$lines" -v q="$4" \
      'BEGIN { printf "| %s | %s | %.3f | %.0f | %.0f | %.0f | %s |\n", f, l, s, b / s / 1e6, n / s, r / 1024, q }'
  }
  row "wc -l" "$wc_s" "$wc_rss" "1"
  ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }
  row "log-ingest run ($(nproc) workers)" "$all_s" "$all_rss" \
    "$(ratio "$wc_s" "$all_s")× wc -l, $(ratio "$one_s" "$all_s")× 1 worker"
  row "log-ingest run (1 worker)" "$one_s" "$one_rss" "$(ratio "$wc_s" "$one_s")× wc -l"
done

if [ -n "$big" ]; then
  file=$work/combined-$big.log
  [ -s "$file" ] || "$app" generate --format combined --size "$big" --seed 42 -o "$file"
  read -r big_s big_rss <<< "$(measure 1 $(ingest "$file" 0))"
  awk -v s="$big_s" -v r="$big_rss" -v b="$(stat -c %s "$file")" -v z="$big" \
    'BEGIN { printf "\n%s combined log (%.2f GB): %.1f s, %.0f MB/s, peak RSS %.0f MiB\n", z, b / 1e9, s, b / s / 1e6, r / 1024 }'
fi
