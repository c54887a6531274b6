#!/usr/bin/env bash
# Runs bench/spsc_plain.cpp (the blocking SPSC queues timed as a plain program) for conveyor,
# moodycamel's BlockingReaderWriterCircularBuffer and tbb::concurrent_bounded_queue, alternately,
# ROUNDS times (default 6), and prints each queue's median and minimum and conveyor's ratios.
#
#   bench/spsc_plain.sh [ROUNDS] [BINARY]   (BINARY: default build/bench/bench/spsc_plain)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-6}
binary=${2:-build/bench/bench/spsc_plain}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for _ in $(seq 1 "$rounds"); do
  for queue in conveyor moodycamel tbb; do
    "$binary" "$queue" | tee -a "$out"
  done
done
awk -v rounds="$rounds" '
  { rate[$1, ++n[$1]] = $2 }
  function sorted_at(q, k,   i, j, t, a) {
    for (i = 1; i <= n[q]; i++) a[i] = rate[q, i]
    for (i = 1; i <= n[q]; i++) for (j = i + 1; j <= n[q]; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return a[k]
  }
  function median(q) { return n[q] % 2 ? sorted_at(q, (n[q] + 1) / 2) : (sorted_at(q, n[q] / 2) + sorted_at(q, n[q] / 2 + 1)) / 2 }
  END {
    printf "\n%d rounds, items/s\n", rounds
    for (q in n) printf "%-11s median %7.2f M/s  min %7.2f M/s\n", q, median(q) / 1e6, sorted_at(q, 1) / 1e6
    printf "conveyor / moodycamel: median %.2fx, worst round %.2fx (target >= 3x)\n", median("conveyor") / median("moodycamel"), worst("moodycamel")
    printf "conveyor / tbb:        median %.2fx, worst round %.2fx (target >= 10x)\n", median("conveyor") / median("tbb"), worst("tbb")
  }
  function worst(peer,   i, r, w) {
    w = 1e18
    for (i = 1; i <= n["conveyor"]; i++) { r = rate["conveyor", i] / rate[peer, i]; if (r < w) w = r }
    return w
  }
' "$out"
