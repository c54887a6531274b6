#!/usr/bin/env bash
# Times the compilation of one small pipeline translation unit (bench/compile_time/
# small_pipeline.cpp, the README's example) as a user's build compiles it: g++ -O3 against the
# public headers of a source tree. With several trees (say an old revision's worktree and this
# checkout) it compiles with each in turn, ROUNDS times (default 5), so that a noisy host slows
# all alike, and prints each tree's median CPU time (user + system; wall time swings more on a
# shared host), its peak compiler memory, and each tree's ratio to the first.
#
#   bench/compile_time.sh [ROUNDS] [SOURCE_ROOT...]   (default: this checkout)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-5}
shift || true
roots=("$@")
[ ${#roots[@]} -eq 0 ] && roots=("$here")
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for i in $(seq 1 "$rounds"); do
  for k in "${!roots[@]}"; do
    root=${roots[$k]}
    /usr/bin/time -f "%U %S %e %M" -o "$out/time" \
      g++ -std=c++20 -O3 -DNDEBUG -I "$root/sync/include" -I "$root/framework/include" \
      -c "$here/bench/compile_time/small_pipeline.cpp" -o "$out/small_pipeline.o"
    read -r user system wall kilobytes <"$out/time"
    cpu=$(awk -v u="$user" -v s="$system" 'BEGIN { printf "%.2f", u + s }')
    echo "round $i, $root: ${cpu} s CPU, ${wall} s wall, $((kilobytes / 1024)) MiB"
    echo "$cpu" >>"$out/cpu.$k"
  done
done
median() { sort -n "$1" | awk '{ a[NR] = $1 } END { print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2) }'; }
first=$(median "$out/cpu.0")
for k in "${!roots[@]}"; do
  m=$(median "$out/cpu.$k")
  awk -v r="${roots[$k]}" -v m="$m" -v f="$first" -v n="$rounds" \
    'BEGIN { printf "%s: median of %d, %.2f s CPU (%.2fx the first tree'"'"'s time)\n", r, n, m, m / f }'
done
