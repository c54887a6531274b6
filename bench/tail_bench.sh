#!/usr/bin/env bash
# `log-ingest serve`'s file input against the file inputs of the log services operators run from
# Debian, on the same Apache combined logs, each line parsed and written as a JSON object to a file.
#
#   bench/tail_bench.sh [--size 1GiB] [--rounds 3] [--follow-seconds 10] [--follow-mb 20]
#                       [--work DIR] [--catch-up-only]
#
# Needs the release build (cmake --workflow --preset release). Two measures, rounds alternating
# the services, medians reported:
# - Catch-up: a log of --size (the sample's realistic profile: many distinct paths and clients) is
#   already written when the service starts; the time until its output holds every line, the CPU
#   seconds, and the peak RSS. `log-ingest run` on the same file, with the same parsing (run twice
#   a round), is the reference for the input's own overhead; so the service is measured twice:
#   writing what `run` writes, and with its defaults, where a tailed file's records also say where
#   they were read ("input", "file", "offset": a fifth more bytes to render and write).
# - Following: 8 files appended at --follow-mb MB/s in all for --follow-seconds
#   (`log-ingest generate --to file://`), read as they grow. The CPU seconds per MB appended, and
#   for log-ingest the lag from append to write (one line in 100 marked, `generate --latency`).
# --catch-up-only measures log-ingest's catch-up against `run` alone: no peers, no following.
# Peers, each in its own work directory:
#   - rsyslog: imfile (inotify), mmnormalize with a liblognorm rule for the combined format, a
#     JSON list template, omfile;
#   - syslog-ng: wildcard-file(), apache-accesslog-parser(), $(format-json), a file destination;
#   - log-ingest serve: a `file` input.
# Every run checks that the output holds every line; the script exits 1 if one did not.
set -euo pipefail
cd "$(dirname "$0")/.."

size=1GiB rounds=3 follow_seconds=10 follow_mb=20 work=${TMPDIR:-/tmp}/conveyor-tail-bench
catch_up_only=0
while [ $# -gt 0 ]; do
  case $1 in
    --size) size=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --follow-seconds) follow_seconds=$2; shift 2 ;;
    --follow-mb) follow_mb=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --catch-up-only) catch_up_only=1; shift ;;
    *)
      echo "usage: $0 [--size 1GiB] [--rounds N] [--follow-seconds S] [--follow-mb MB] [--work DIR] [--catch-up-only]" >&2
      exit 2
      ;;
  esac
done
# shellcheck source=bench/peers.sh
. bench/peers.sh
prepare_bench "$work"
failures=0

# Starts service $1 following $2/*.log into $3; prints its pid.
start() {
  local service=$1 in=$2 out=$3 dir=$work/$1
  rm -rf "$dir" && mkdir -p "$dir"
  case $service in
    log-ingest | log-ingest-same)
      # The lines it cannot parse go to the dead letters, which count with the records.
      # log-ingest-same writes what `run` writes: the record's fields, without the "input", "file"
      # and "offset" that a tailed file's records carry by default.
      local fields=""
      [ "$service" = log-ingest-same ] && fields=$run_fields
      printf 'inputs:\n  - {name: files, type: file, include: ["%s/*.log"], format: combined}\n%soutputs: {records: %s, dead_letters: %s}\nservice: {metrics_listen: none, state_dir: %s}\n' \
        "$in" "$fields" "$out" "$out.dead" "$dir/state" > "$dir/serve.yaml"
      "$app" serve --config "$dir/serve.yaml" > "$dir/stdout" 2> "$dir/stderr" &
      echo $!
      ;;
    rsyslog)
      sed -e "s|@WORK@|$dir|" -e "s|@IN@|$in|" -e "s|@OUT@|$out|" \
        -e "s|@RULEBASE@|$PWD/bench/tail/rsyslog.rulebase|" \
        bench/tail/rsyslog.conf.in > "$dir/rsyslog.conf"
      start_rsyslog "$dir/rsyslog.conf" "$dir"
      ;;
    syslog-ng)
      IN=$in OUT=$out start_syslog_ng "$PWD/bench/tail/syslog-ng.conf" "$dir"
      ;;
  esac
}

# Catch-up of service $1 on the big log: prints "seconds cpu_seconds peak_rss_kib".
catch_up() {
  local service=$1 out=$work/$1.jsonl in=$work/catch-up
  rm -f "$out" "$out.dead"
  local start_time=$EPOCHREALTIME pid last
  pid=$(start "$service" "$in" "$out")
  # Looked at every 10 ms: `run`'s time is its exit, to the millisecond.
  if ! last=$(wait_for_lines "$out" "$lines" "$pid" 900 0.01); then
    echo "$service: catch-up failed; see $work/$service" >&2
    stop_service "$pid"
    return 1
  fi
  local cpu rss
  cpu=$(cpu_seconds "$pid")
  rss=$(peak_rss_kib "$pid")
  stop_service "$pid"
  rm -f "$out" "$out.dead"
  awk -v a="$start_time" -v b="$last" -v c="$cpu" -v r="$rss" \
    'BEGIN { printf "%.3f %.3f %d\n", b - a, c, r }'
}

# Following: prints "cpu_seconds megabytes [p50 p99 max]".
follow() {
  local service=$1 out=$work/$1.jsonl in=$work/follow
  rm -rf "$in" && mkdir -p "$in" && rm -f "$out" "$out.dead"
  local pid
  pid=$(start "$service" "$in" "$out")
  sleep 1  # up, and watching the empty directory
  local cpu_before
  cpu_before=$(cpu_seconds "$pid")
  local rate total
  rate=$(awk -v mb="$follow_mb" -v b="$line_bytes" 'BEGIN { printf "%d", mb * 1e6 / b }')
  total=$((rate * follow_seconds))
  local latency=()
  [ "$service" = log-ingest ] && latency=(--latency "$out")
  if ! "$app" generate --to "file://$in/app.log" --connections 8 --rate "$rate" --lines "$total" \
    --profile realistic --seed 7 "${latency[@]}" 2> "$work/$service/follow.log"; then
    echo "$service: following failed; see $work/$service/follow.log" >&2
    stop_service "$pid"
    return 1
  fi
  if ! wait_for_lines "$out" "$total" "$pid" 900 0.05 > /dev/null; then
    echo "$service: following lost lines; see $work/$service" >&2
    stop_service "$pid"
    return 1
  fi
  local cpu_after megabytes
  cpu_after=$(cpu_seconds "$pid")
  stop_service "$pid"
  megabytes=$(cat "$in"/*.log | wc -c | awk '{ print $1 / 1e6 }')
  local quantiles="- - -"
  if [ "$service" = log-ingest ]; then
    quantiles=$(sed -n 's/.* p50 \([0-9.]*\) ms, p99 \([0-9.]*\) ms, p99.9 [0-9.]* ms, max \([0-9.]*\) ms$/\1 \2 \3/p' \
      "$work/$service/follow.log")
  fi
  rm -rf "$in" "$out" "$out.dead"
  awk -v c="$(awk -v a="$cpu_before" -v b="$cpu_after" 'BEGIN { print b - a }')" -v m="$megabytes" \
    -v q="$quantiles" 'BEGIN { printf "%.3f %.1f %s\n", c, m, q }'
}

# The reference: log-ingest run on the big log, timed to its exit.
run_reference() {
  local start_time=$EPOCHREALTIME
  /usr/bin/time -f "%U %S" -o "$work/run.time" "$app" run -i "$work/catch-up/access.log" \
    --format combined -o "$work/run.jsonl" --summary none --dead-letter "$work/run.jsonl.dead" -q
  awk -v a="$start_time" -v b="$EPOCHREALTIME" -v c="$(awk '{ print $1 + $2 }' "$work/run.time")" \
    'BEGIN { printf "run %.3f %.3f 0\n", b - a, c }' >> "$work/results.$$"
  if [ "$(cat "$work/run.jsonl" "$work/run.jsonl.dead" | wc -l)" -ne "$lines" ]; then
    echo "run lost lines" >&2
    failures=$((failures + 1))
  fi
  rm -f "$work/run.jsonl" "$work/run.jsonl.dead"
}

services=(log-ingest)
# The fields `run` writes for an access log: every field of a record, in the same order.
run_fields=$'pipeline: {fields: [time, host, user, method, path, protocol, status, bytes, referrer, agent, duration, facility, severity, program, pid, message]}\n'
if [ "$catch_up_only" -eq 0 ]; then
  [ -n "$rsyslogd" ] && services+=(rsyslog)
  [ -n "$syslog_ng" ] && services+=(syslog-ng)
fi

# The big log, made once, and the reference: log-ingest run on it.
mkdir -p "$work/catch-up"
"$app" generate --profile realistic --size "$size" --seed 42 -o "$work/catch-up/access.log"
lines=$(wc -l < "$work/catch-up/access.log")
bytes=$(stat -c %s "$work/catch-up/access.log")
line_bytes=$((bytes / lines))
: > "$work/results.$$"
for round in $(seq "$rounds"); do
  run_reference
  if result=$(catch_up log-ingest-same); then
    echo "log-ingest-same $result" >> "$work/results.$$"
  else
    failures=$((failures + 1))
  fi
  run_reference  # twice a round, beside each of the service's catch-ups
  for service in "${services[@]}"; do
    if result=$(catch_up "$service"); then
      echo "$service $result" >> "$work/results.$$"
    else
      failures=$((failures + 1))
    fi
    [ "$catch_up_only" -eq 1 ] && continue
    if result=$(follow "$service"); then
      echo "follow-$service $result" >> "$work/results.$$"
    else
      failures=$((failures + 1))
    fi
  done
  echo "round $round of $rounds done" >&2
done

describe_machine
printf 'catch-up: %s lines (%.1f MB, realistic profile), %s rounds\n' "$lines" \
  "$(awk -v b="$bytes" 'BEGIN { print b / 1e6 }')" "$rounds"
printf '| reader | seconds (median) | MB/s | CPU s | peak RSS (MiB) |\n'
printf '| --- | --- | --- | --- | --- |\n'
median_seconds() {
  { grep "^$1 " "$work/results.$$" || true; } | sort -k2 -n |
    awk '{ s[NR] = $2 } END { if (NR > 0) print s[int((NR + 1) / 2)] }'
}
for service in run log-ingest-same "${services[@]}"; do
  { grep "^$service " "$work/results.$$" || true; } | sort -k2 -n |
    awk -v name="$service" -v b="$bytes" '
    { s[NR] = $2; c[NR] = $3; r[NR] = $4 }
    END {
      if (NR == 0) { printf "| %s | failed | | | |\n", name; exit }
      i = int((NR + 1) / 2)
      label = name
      if (name == "run") label = "log-ingest run (reference)"
      if (name == "log-ingest-same") label = "log-ingest serve, file input, run'"'"'s fields"
      if (name == "log-ingest") label = "log-ingest serve, file input (+ input, file, offset)"
      printf "| %s | %.3f | %.1f | %.2f | %s |\n", label, s[i], b / s[i] / 1e6, c[i],
        name == "run" ? "-" : sprintf("%.0f", r[i] / 1024)
    }'
done
run_median=$(median_seconds run)
if [ -n "$run_median" ]; then
  for service in log-ingest-same log-ingest; do
    median=$(median_seconds "$service")
    if [ -n "$median" ]; then
      awk -v r="$run_median" -v s="$median" -v n="$service" \
        'BEGIN { printf "catch-up of %s against run: %.2fx\n", n, r / s }'
    fi
  done
fi
if [ "$catch_up_only" -eq 0 ]; then
  echo
  printf 'following: 8 files, %s MB/s in all for %s s\n' "$follow_mb" "$follow_seconds"
  printf '| service | CPU s per MB appended | lag p50 (ms) | lag p99 (ms) | lag max (ms) |\n'
  printf '| --- | --- | --- | --- | --- |\n'
  for service in "${services[@]}"; do
    { grep "^follow-$service " "$work/results.$$" || true; } | awk '{ print $2 / $3, $4, $5, $6 }' |
      sort -k1 -g | awk -v name="$service" '
      { c[NR] = $1; p50[NR] = $2; p99[NR] = $3; m[NR] = $4 }
      END {
        if (NR == 0) { printf "| %s | failed | | | |\n", name; exit }
        i = int((NR + 1) / 2)
        printf "| %s | %.4f | %s | %s | %s |\n", name, c[i], p50[i], p99[i], m[i]
      }'
  done
fi
rm -rf "$work/results.$$" "$work/catch-up" "$work/run.time"
[ "$failures" -eq 0 ]
