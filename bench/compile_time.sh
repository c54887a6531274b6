#!/usr/bin/env bash
# Times the compilation of one small pipeline translation unit (bench/compile_time/
# small_pipeline.cpp, the README's example) as a user's build compiles it: g++ -O3, the public
# headers only. Prints each of ROUNDS runs (default 5) and the median, in seconds, and the
# compiler's peak memory.
#
#   bench/compile_time.sh [ROUNDS] [SOURCE_ROOT]   (SOURCE_ROOT: default this checkout)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-5}
root=${2:-$here}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for i in $(seq 1 "$rounds"); do
  /usr/bin/time -f "%e %M" -o "$out/time" \
    g++ -std=c++20 -O3 -DNDEBUG -I "$root/sync/include" -I "$root/framework/include" \
    -c "$here/bench/compile_time/small_pipeline.cpp" -o "$out/small_pipeline.o"
  read -r seconds kilobytes <"$out/time"
  echo "run $i: ${seconds} s, $((kilobytes / 1024)) MiB"
  echo "$seconds" >>"$out/all"
done
sort -n "$out/all" | awk '{ a[NR] = $1 } END {
  m = NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2
  printf "median of %d: %.2f s\n", NR, m }'
