#!/usr/bin/env bash
# Compares the benchmarks of an older revision with the working tree on this machine.
#
#   bench/compare.sh OLD_REV [ROUNDS] [-- extra Google Benchmark flags]
#
# Builds OLD_REV (in a git worktree under build/compare/) and the working tree (build/bench), each
# with the `bench` preset, then runs pipeline_bench and sync_bench from the old and the new build
# alternately, ROUNDS times (default 3, at least 3), so that a noisy host slows both alike. Prints,
# for every benchmark row, the median of each side over the rounds and the ratio new/old
# (items/s: higher is better; a row without a rate compares time, so lower is better and the
# ratio is old/new instead). Raw results stay in build/compare/results/.
# Needs python3 for the medians.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ $# -lt 1 ]; then
  sed -n '2,12p' "$0"
  exit 2
fi
old_rev=$1
shift
rounds=3
if [ $# -gt 0 ] && [ "$1" != "--" ]; then
  rounds=$1
  shift
fi
[ "${1:-}" = "--" ] && shift
extra=("$@")
if [ "$rounds" -lt 3 ]; then
  echo "compare.sh: at least 3 rounds" >&2
  exit 2
fi

root=$PWD
work=$root/build/compare
old_tree=$work/old-tree
results=$work/results
mkdir -p "$work"
rm -rf "$results"
mkdir -p "$results"

old_commit=$(git rev-parse --verify "$old_rev^{commit}")
# A leftover that is not a worktree (a dangling link, an interrupted add) is replaced.
if [ -L "$old_tree" ] || { [ -e "$old_tree" ] &&
  [ "$(git -C "$old_tree" rev-parse --show-toplevel 2>/dev/null)" != "$old_tree" ]; }; then
  rm -rf "$old_tree"
  git worktree prune
fi
if [ -d "$old_tree" ]; then
  git -C "$old_tree" checkout -q --detach "$old_commit"
else
  git worktree add -q --detach "$old_tree" "$old_commit"
fi

echo "==> building $old_rev ($old_commit) and the working tree"
(cd "$old_tree" && cmake --preset bench > "$work/old-configure.log" &&
  cmake --build --preset bench --target pipeline_bench sync_bench > "$work/old-build.log")
cmake --preset bench > "$work/new-configure.log"
cmake --build --preset bench --target pipeline_bench sync_bench > "$work/new-build.log"

benches=(sync_bench pipeline_bench)
for round in $(seq 1 "$rounds"); do
  for bench in "${benches[@]}"; do
    for side in old new; do
      if [ "$side" = old ]; then dir=$old_tree; else dir=$root; fi
      echo "==> round $round/$rounds: $bench ($side)"
      "$dir/build/bench/bench/$bench" --benchmark_format=console \
        --benchmark_out="$results/$bench.$side.$round.json" --benchmark_out_format=json \
        "${extra[@]}" > "$results/$bench.$side.$round.txt"
    done
  done
done

python3 - "$results" "$rounds" "$old_rev" <<'PY'
import json, statistics, sys, pathlib
results, rounds, old_rev = pathlib.Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]

def rows(bench, side):
    runs = {}
    for r in range(1, rounds + 1):
        text = (results / f"{bench}.{side}.{r}.json").read_text()
        if not text.strip():
            continue  # a --benchmark_filter that matched none of this binary's rows
        data = json.loads(text)
        for b in data["benchmarks"]:
            if b.get("run_type") == "aggregate":
                continue
            rate = b.get("items_per_second")
            value = (rate, True) if rate else (b["real_time"], False)
            runs.setdefault(b["name"], []).append(value)
    return runs

print(f"\nmedians of {rounds} alternating rounds; ratio > 1 means the working tree is faster "
      f"than {old_rev}")
for bench in ("sync_bench", "pipeline_bench"):
    old, new = rows(bench, "old"), rows(bench, "new")
    print(f"\n{bench}")
    print(f"{'benchmark':66} {'old':>12} {'new':>12} {'new/old':>8}")
    for name in new:
        if name not in old:
            continue
        is_rate = new[name][0][1]
        o = statistics.median(v for v, _ in old[name])
        n = statistics.median(v for v, _ in new[name])
        ratio = n / o if is_rate else o / n
        unit = "/s" if is_rate else " ns"
        def fmt(x):
            return f"{x / 1e6:.2f}M{unit}" if is_rate and x >= 1e6 else f"{x:.3g}{unit}"
        print(f"{name[:66]:66} {fmt(o):>12} {fmt(n):>12} {ratio:7.2f}x")
PY
