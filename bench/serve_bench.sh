#!/usr/bin/env bash
# `log-ingest serve` against the log services operators run from Debian, on the same messages:
# syslog over TCP (RFC 5424, octet-counted) from 8 connections, parsed and written as JSON lines
# to a file.
#
#   bench/serve_bench.sh [--messages 1000000] [--rounds 3] [--connections 8] [--work DIR]
#
# Needs the release build (cmake --workflow --preset release). The load is the sample's realistic
# access-log lines as nginx sends them to syslog, rendered to a file once (`log-ingest generate
# --format syslog5424`) and sent by `log-ingest generate --to --from FILE`, as fast as each service
# takes it: the same bytes for every service, and no rendering on the cores they share. Each run starts the service, sends
# --messages, and waits until its output file holds every one of them (the line count is checked;
# a run that loses messages fails). Peers, in their own work directory:
#   - rsyslog: imptcp, the default RFC 5424 parser, a JSON list template, omfile. Debian's
#     rsyslog and syslog-ng-core packages conflict, so the script unpacks rsyslog's package
#     (apt-get download, dpkg -x) under the work directory and runs it from there;
#   - syslog-ng: the syslog() source, $(format-json), a file destination (threaded);
#   - log-ingest serve: its syslog_tcp input, the records file, dead letters off.
# Each run starts on a quiet page cache: the output of a run is deleted once its lines are
# counted, before its pages are written back (a failed run's is kept), and a `sync` before each
# start writes back whatever else is dirty, so that no service's run pays for the writeback of
# another's output.
# Rounds alternate the services, and the table gives each one's medians: messages/s and MB/s
# (from the first message sent to the last line written, within one 0.02 s poll), the CPU seconds
# the service used per million messages, and its peak RSS.
#
# Then latency: each service is sent the same messages at half its own median messages/s, one in
# 100 marked with the time it was sent (`generate --latency`), and the generator follows the
# output file for the marks. The second table gives the medians over the
# rounds of each quantile of the time from send to write, and the lines after it every round's p99.
#
# The script exits 1 if any run failed: messages lost, or a service that did not run.
set -euo pipefail
cd "$(dirname "$0")/.."

messages=1000000 rounds=3 connections=8 work=${TMPDIR:-/tmp}/conveyor-serve-bench
while [ $# -gt 0 ]; do
  case $1 in
    --messages) messages=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --connections) connections=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    *)
      echo "usage: $0 [--messages N] [--rounds N] [--connections N] [--work DIR]" >&2
      exit 2
      ;;
  esac
done
# shellcheck source=bench/peers.sh
. bench/peers.sh
prepare_bench "$work"
port=16514

# Starts service $1 writing to $2, once whatever is dirty is written back; prints its pid. Its
# own output goes to files, so that the caller's $(...) does not wait for it.
start() {
  local service=$1 out=$2 dir=$work/$1
  rm -rf "$dir" && mkdir -p "$dir"
  sync
  case $service in
    log-ingest)
      printf 'inputs:\n  - {name: syslog_tcp, type: syslog_tcp, listen: "127.0.0.1:%s"}\noutputs: {records: %s, dead_letters: none}\nservice: {metrics_listen: none}\n' \
        "$port" "$out" > "$dir/serve.yaml"
      "$app" serve --config "$dir/serve.yaml" > "$dir/stdout" 2> "$dir/stderr" &
      echo $!
      ;;
    rsyslog)
      sed -e "s|@WORK@|$dir|" -e "s|@PORT@|$port|" -e "s|@OUT@|$out|" \
        bench/serve/rsyslog.conf.in > "$dir/rsyslog.conf"
      start_rsyslog "$dir/rsyslog.conf" "$dir"
      ;;
    syslog-ng)
      PORT=$port OUT=$out start_syslog_ng "$PWD/bench/serve/syslog-ng.conf" "$dir"
      ;;
  esac
}

# Waits up to 10 s for the port to open.
wait_for_port() {
  for _ in $(seq 200); do
    (exec 3<> "/dev/tcp/127.0.0.1/$port") 2> /dev/null && return 0
    sleep 0.05
  done
}

# One run of service $1: prints "seconds cpu_seconds peak_rss_kib".
run_once() {
  local service=$1 out=$work/$1.jsonl
  rm -f "$out"
  local pid
  pid=$(start "$service" "$out")
  wait_for_port
  local cpu_before
  cpu_before=$(cpu_seconds "$pid")
  local start_time=$EPOCHREALTIME
  "$app" generate --to "tcp://127.0.0.1:$port" --from "$work/messages.txt" \
    --connections "$connections" 2> "$work/$service/generate.log"
  # Done when the file holds every message; the time is that of the last growth seen.
  local last
  if ! last=$(wait_for_lines "$out" "$messages" "$pid" 600 0.02); then
    echo "$service: see $work/$service/stderr" >&2
    stop_service "$pid"
    return 1
  fi
  local cpu_after rss
  cpu_after=$(cpu_seconds "$pid")
  rss=$(peak_rss_kib "$pid")
  stop_service "$pid"
  rm -f "$out"
  awk -v a="$start_time" -v b="$last" -v c="$cpu_before" -v d="$cpu_after" -v r="$rss" \
    'BEGIN { printf "%.4f %.3f %d\n", b - a, d - c, r }'
}

# One latency run of service $1 at $2 messages/s: prints "p50 p99 p99.9 max" in milliseconds.
latency_once() {
  local service=$1 rate=$2 out=$work/$1.jsonl
  rm -f "$out"
  local pid
  pid=$(start "$service" "$out")
  wait_for_port
  local status=0
  "$app" generate --to "tcp://127.0.0.1:$port" --rate "$rate" --from "$work/messages.txt" \
    --connections "$connections" --latency "$out" 2> "$work/$service/latency.log" || status=$?
  stop_service "$pid"
  if [ "$status" -ne 0 ]; then
    echo "$service: the latency run failed; see $work/$service/latency.log" >&2
    return 1
  fi
  rm -f "$out"
  sed -n 's/.* p50 \([0-9.]*\) ms, p99 \([0-9.]*\) ms, p99.9 \([0-9.]*\) ms, max \([0-9.]*\) ms$/\1 \2 \3 \4/p' \
    "$work/$service/latency.log"
}

failures=0
services=(log-ingest)
[ -n "$rsyslogd" ] && services+=(rsyslog)
[ -n "$syslog_ng" ] && services+=(syslog-ng)
# The messages, rendered once before any timing: the generator then only sends them.
"$app" generate --format syslog5424 --lines "$messages" --profile realistic --seed 42 \
  -o "$work/messages.txt"
bytes=$(stat -c %s "$work/messages.txt")
for round in $(seq "$rounds"); do
  for service in "${services[@]}"; do
    if result=$(run_once "$service"); then
      echo "$service $result" >> "$work/results.$$"
    else
      failures=$((failures + 1))
    fi
  done
  echo "round $round of $rounds done" >&2
done

# Latency, at half of each service's median messages/s.
rm -f "$work/latency.$$"
for round in $(seq "$rounds"); do
  for service in "${services[@]}"; do
    seconds=$({ grep "^$service " "$work/results.$$" || true; } | sort -k2 -n |
      awk '{ s[NR] = $2 } END { if (NR) print s[int((NR + 1) / 2)] }')
    [ -n "$seconds" ] || continue
    rate=$(awk -v m="$messages" -v s="$seconds" 'BEGIN { printf "%d", m / s / 2 }')
    if result=$(latency_once "$service" "$rate"); then
      echo "$service $rate $result" >> "$work/latency.$$"
    else
      failures=$((failures + 1))
    fi
  done
  echo "latency round $round of $rounds done" >&2
done

describe_machine
printf 'messages: %s (%.1f MB), %s connections, %s rounds\n' "$messages" "$(awk -v b="$bytes" 'BEGIN { print b / 1e6 }')" "$connections" "$rounds"
printf '| service | seconds (median) | messages/s | MB/s | CPU s per million messages | peak RSS (MiB) |\n'
printf '| --- | --- | --- | --- | --- | --- |\n'
for service in "${services[@]}"; do
  { grep "^$service " "$work/results.$$" || true; } | sort -k2 -n |
    awk -v name="$service" -v m="$messages" -v b="$bytes" '
    { s[NR] = $2; c[NR] = $3; r[NR] = $4 }
    END {
      if (NR == 0) { printf "| %s | failed | | | | |\n", name; exit }
      i = int((NR + 1) / 2)
      printf "| %s | %.3f | %.0f | %.1f | %.2f | %.0f |\n", name, s[i], m / s[i], b / s[i] / 1e6,
        c[i] / m * 1e6, r[i] / 1024
    }'
done
echo
printf '| service | messages/s (half its maximum) | p50 (ms) | p99 (ms) | p99.9 (ms) | max (ms) |\n'
printf '| --- | --- | --- | --- | --- | --- |\n'
for service in "${services[@]}"; do
  { grep "^$service " "$work/latency.$$" || true; } |
    awk -v name="$service" '
    function median(column,   n, i, j, t, v) {
      n = 0
      for (i = 1; i <= NR; ++i) v[++n] = row[i, column]
      for (i = 2; i <= n; ++i) for (j = i; j > 1 && v[j - 1] > v[j]; --j) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
      return v[int((n + 1) / 2)]
    }
    { for (c = 2; c <= 6; ++c) row[NR, c] = $c }
    END {
      if (NR == 0) { printf "| %s | failed | | | | |\n", name; exit }
      printf "| %s | %d | %.2f | %.2f | %.2f | %.2f |\n", name, median(2), median(3), median(4),
        median(5), median(6)
    }'
done
echo
# Every round's p99, in the order run: a target on the p99 must hold in each.
for service in "${services[@]}"; do
  { grep "^$service " "$work/latency.$$" || true; } |
    awk -v name="$service" '{ p = p sep $4; sep = ", " } END { if (NR) printf "%s p99 by round (ms): %s\n", name, p }'
done
rm -f "$work/results.$$" "$work/latency.$$" "$work/messages.txt"
# A run that lost messages, or a service that would not run, fails the script (after the tables).
[ "$failures" -eq 0 ]
