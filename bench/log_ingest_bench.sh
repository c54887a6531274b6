#!/usr/bin/env bash
# End-to-end throughput of `log-ingest run` on generated logs, against `wc -l` and syslog-ng on the
# same files.
#
#   bench/log_ingest_bench.sh [--profile realistic|small] [--size 1GiB] [--runs 5] [--big 5GiB]
#                             [--work DIR]
#
# Needs the release build (cmake --workflow --preset release). For each of the combined and the
# JSON-lines format it generates a file of --size with the app's generator (fixed seed, --profile:
# realistic by default, whose paths and clients do not fit in cache; small is the embedded
# sample's), warms the page cache, then reports the median of --runs runs of:
#   - wc -l (the machine's raw read speed from page cache);
#   - log-ingest run with the default workers (one per core) and with --workers 1: parse, filter
#     nothing, aggregate, write the records and the summary to /dev/null;
#   - syslog-ng (Debian's syslog-ng-core and syslog-ng-scl, configs in bench/log_ingest/), tuned
#     with threaded(no), log-fetch-limit(1000) and log-iw-size(10000): the combined file parsed
#     with apache-accesslog-parser(), the JSON one with json-parser() and date-parser(), each
#     record rendered with $(format-json) to /dev/null, rejected lines to a file. It runs in the
#     foreground with its own persist file, pid file and control socket in the work directory.
#     It does not stop at the end of a file: the script polls `syslog-ng-ctl stats` every 0.05 s
#     until its destinations have written every line, so its time includes its start-up and up to
#     one poll interval more than it took; it does no aggregation;
# with MB/s, lines/s, peak RSS, and the ratios. With --big, it also runs a file of that size once
# and reports its peak RSS, to show that memory does not grow with the input.
#
# rsyslog is not measured: Debian's rsyslog and syslog-ng-core packages conflict (each provides
# system-log-daemon), so one machine cannot have both installed.
set -euo pipefail
cd "$(dirname "$0")/.."

profile=realistic size=1GiB runs=5 big="" work=${TMPDIR:-/tmp}/conveyor-log-ingest-bench
while [ $# -gt 0 ]; do
  case $1 in
    --profile) profile=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --big) big=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    *) echo "usage: $0 [--profile realistic|small] [--size SIZE] [--runs N] [--big SIZE] [--work DIR]" >&2; exit 2 ;;
  esac
done
case $profile in
  realistic | small) ;;
  *) echo "--profile: realistic or small" >&2; exit 2 ;;
esac
app=build/release/apps/log-ingest/log-ingest
[ -x "$app" ] || { echo "$app not built: cmake --workflow --preset release" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "/usr/bin/time missing: cmake/install-deps.sh installs it" >&2; exit 1; }
syslog_ng=""
if command -v syslog-ng > /dev/null && command -v syslog-ng-ctl > /dev/null \
  && [ -f /usr/share/syslog-ng/include/scl/apache/apache.conf ]; then
  syslog_ng=yes
else
  echo "syslog-ng (syslog-ng-core, syslog-ng-scl) not installed: cmake/install-deps.sh installs it; its rows are skipped" >&2
fi
mkdir -p "$work"
work=$(cd "$work" && pwd)  # syslog-ng's config reads it, from another working directory

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

# Lines that syslog-ng's file destinations have written so far (0 before its socket is up).
syslog_ng_written() {
  { syslog-ng-ctl stats --control="$1" 2> /dev/null || true; } |
    awk -F';' '$1 == "dst.file" && $5 == "written" { sum += $6 } END { print sum + 0 }'
}

# One syslog-ng run over a file: prints "seconds peak_rss_kib", the seconds from its start until
# its destinations have written all `lines`.
syslog_ng_once() {
  local config=$1 input=$2 lines=$3 timeout=$4
  local dir=$work/syslog-ng
  rm -rf "$dir"  # a persist file left over would make it resume at the end of the file
  mkdir -p "$dir"
  local start=$EPOCHREALTIME
  INPUT=$input WORK=$dir /usr/bin/time -f '%M' -o "$dir/time.txt" \
    syslog-ng --foreground --no-caps --cfgfile="$config" --persist-file="$dir/persist" \
    --pidfile="$dir/pid" --control="$dir/ctl" 2> "$dir/stderr" &
  local time_pid=$!
  local written=0
  while [ "$written" -lt "$lines" ]; do
    if ! kill -0 "$time_pid" 2> /dev/null; then
      echo "syslog-ng exited early; see $dir/stderr" >&2
      return 1
    fi
    if awk -v a="$start" -v b="$EPOCHREALTIME" -v t="$timeout" 'BEGIN { exit !(b - a > t) }'; then
      echo "syslog-ng wrote $written of $lines lines in ${timeout}s; stopped" >&2
      syslog-ng-ctl stop --control="$dir/ctl" > /dev/null || true
      wait "$time_pid" || true
      return 1
    fi
    sleep 0.05
    written=$(syslog_ng_written "$dir/ctl")
  done
  local end=$EPOCHREALTIME
  syslog-ng-ctl stop --control="$dir/ctl" > /dev/null
  wait "$time_pid"
  echo "$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.4f", b - a }') $(cat "$dir/time.txt")"
}

# The median of `runs` syslog-ng runs: "median_seconds peak_rss_kib".
syslog_ng_measure() {
  for _ in $(seq "$runs"); do
    syslog_ng_once "$@"
  done | sort -n | awk '{ t[NR] = $1; m[NR] = $2 } END { i = int((NR + 1) / 2); print t[i], m[i] }'
}

printf '%s\n' "machine: $(nproc) cores, $(uname -r), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
[ -n "$syslog_ng" ] && printf '%s\n' "syslog-ng: $(syslog-ng --version | head -1)"
printf 'profile: %s\n' "$profile"
printf '| format | measure | seconds (median of %s) | MB/s | lines/s | peak RSS (MiB) | ratio |\n' "$runs"
printf '| --- | --- | --- | --- | --- | --- | --- |\n'
for format in combined json; do
  file=$work/$format-$profile-$size.log
  [ -s "$file" ] || "$app" generate --profile "$profile" --format "$format" --size "$size" --seed 42 -o "$file"
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
  if [ -n "$syslog_ng" ]; then
    # At least 1 MB/s, or it is stuck.
    timeout=$(awk -v b="$bytes" 'BEGIN { printf "%d", 60 + b / 1e6 }')
    if sng=$(syslog_ng_measure "bench/log_ingest/syslog-ng-$format.conf" "$file" "$lines" "$timeout") \
      && [ -n "$sng" ]; then
      read -r sng_s sng_rss <<< "$sng"
      row "syslog-ng" "$sng_s" "$sng_rss" \
        "log-ingest is $(ratio "$sng_s" "$all_s")× ($(nproc) workers), $(ratio "$sng_s" "$one_s")× (1 worker)"
    else
      printf '| %s | syslog-ng | failed | | | | |\n' "$format"
    fi
  fi
done

if [ -n "$big" ]; then
  file=$work/combined-$profile-$big.log
  [ -s "$file" ] || "$app" generate --profile "$profile" --format combined --size "$big" --seed 42 -o "$file"
  read -r big_s big_rss <<< "$(measure 1 $(ingest "$file" 0))"
  awk -v s="$big_s" -v r="$big_rss" -v b="$(stat -c %s "$file")" -v z="$big" -v p="$profile" \
    'BEGIN { printf "\n%s %s combined log (%.2f GB): %.1f s, %.0f MB/s, peak RSS %.0f MiB\n", z, p, b / 1e9, s, b / s / 1e6, r / 1024 }'
fi
