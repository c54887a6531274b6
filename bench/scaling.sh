#!/usr/bin/env bash
# How `log-ingest run` scales with cores: throughput by --workers, on generated logs of the
# realistic profile (paths and clients that do not fit in cache), against `wc -l` on the same file.
#
#   bench/scaling.sh [--workers "1 2 4 8 16"] [--size 1GiB] [--runs 3] [--work DIR] [--app CMD]
#
# For the combined and the JSON-lines format it generates a file of --size (fixed seed), warms
# the page cache, then reports the median wall time of --runs runs of `log-ingest run` for each
# worker count (records, summary and dead letters to /dev/null), with MB/s and the speed-up over
# one worker. Meant for a machine with more cores than the two CI has; on two cores it shows
# only the first step.
set -euo pipefail
cd "$(dirname "$0")/.."

workers_list="1 2 4 8 16" size=1GiB runs=3 work=${TMPDIR:-/tmp}/conveyor-scaling
app=build/release/apps/log-ingest/log-ingest
while [ $# -gt 0 ]; do
  case $1 in
    --workers) workers_list=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --app) app=$2; shift 2 ;;
    *) echo "usage: $0 [--workers LIST] [--size SIZE] [--runs N] [--work DIR] [--app CMD]" >&2; exit 2 ;;
  esac
done
[ -x "$app" ] || { echo "$app not built: cmake --workflow --preset release" >&2; exit 1; }
mkdir -p "$work"

# The median wall time, in seconds, of `runs` runs of a command.
median_seconds() {
  for _ in $(seq "$runs"); do
    local start=$EPOCHREALTIME
    "$@" > /dev/null
    local end=$EPOCHREALTIME
    awk -v a="$start" -v b="$end" 'BEGIN { printf "%.4f\n", b - a }'
  done | sort -n | awk '{ t[NR] = $1 } END { print t[int((NR + 1) / 2)] }'
}

echo "cores: $(nproc), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
for format in combined json; do
  file=$work/realistic-$size.$format
  [ -s "$file" ] || "$app" generate --profile realistic --format "$format" --size "$size" --seed 42 -o "$file"
  bytes=$(stat -c %s "$file")
  cat "$file" > /dev/null
  wc_s=$(median_seconds wc -l "$file")
  echo
  echo "$format: $bytes bytes; wc -l $(awk -v b="$bytes" -v s="$wc_s" 'BEGIN { printf "%.0f MB/s", b / s / 1e6 }')"
  printf '%8s %10s %10s %9s\n' workers seconds MB/s speed-up
  one=""
  for workers in $workers_list; do
    s=$(median_seconds "$app" run --input "$file" --format "$format" --workers "$workers" \
      --output /dev/null --summary /dev/null --dead-letter /dev/null --quiet)
    [ -n "$one" ] || one=$s
    awk -v w="$workers" -v s="$s" -v b="$bytes" -v one="$one" \
      'BEGIN { printf "%8d %10.3f %10.0f %8.2fx\n", w, s, b / s / 1e6, one / s }'
  done
done
