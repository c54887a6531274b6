# shellcheck shell=bash
# What the service benchmarks (serve_bench.sh, tail_bench.sh) share: rsyslog unpacked from its
# Debian package, and the CPU, memory and stopping of a service they started. Sourced, not run.
#
# Debian's rsyslog and syslog-ng-core packages conflict, so rsyslog is not installed:
# `find_rsyslog WORK` unpacks its package (apt-get download, dpkg -x) under WORK and sets
# `rsyslogd` and `rsyslog_modules` (empty when it could not; its libraries are installed by
# cmake/install-deps.sh). `syslog_ng` is "yes" when syslog-ng is installed.
# `prepare_bench WORK` does what every script does once its arguments are read: it sets `app` to
# the release build's log-ingest (or stops the script when it is not built), makes `work` WORK as
# an absolute path, created, and finds the peers (find_rsyslog).

prepare_bench() {
  app=$PWD/build/release/apps/log-ingest/log-ingest
  [ -x "$app" ] || { echo "$app not built: cmake --workflow --preset release" >&2; exit 1; }
  mkdir -p "$1"
  work=$(cd "$1" && pwd)
  find_rsyslog "$work"
}

find_rsyslog() {
  local package=$1/rsyslog-package
  rsyslogd="" rsyslog_modules=""
  if [ ! -x "$package/usr/sbin/rsyslogd" ]; then
    (cd "$1" && rm -f rsyslog_*.deb && apt-get download rsyslog > /dev/null 2>&1 &&
      dpkg -x rsyslog_*.deb "$package") || true
  fi
  if [ -x "$package/usr/sbin/rsyslogd" ]; then
    rsyslogd=$package/usr/sbin/rsyslogd
    rsyslog_modules=$(dirname "$(find "$package/usr/lib" -name imptcp.so | head -1)")
  else
    echo "rsyslog could not be fetched (apt-get download rsyslog); its rows are skipped" >&2
  fi
  syslog_ng=""
  if command -v syslog-ng > /dev/null; then
    syslog_ng=yes
  else
    echo "syslog-ng (syslog-ng-core) not installed: cmake/install-deps.sh installs it; its rows are skipped" >&2
  fi
}

# The CPU seconds process $1 has used.
cpu_seconds() {
  awk -v t="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); print ($12 + $13) / t }' "/proc/$1/stat"
}

# Its peak resident memory, KiB.
peak_rss_kib() {
  awk '/^VmHWM:/ { print $2 }' "/proc/$1/status"
}

# Starts rsyslogd on configuration $1, its pid file and output in directory $2; prints its pid.
start_rsyslog() {
  "$rsyslogd" -n -f "$1" -i "$2/pid" -M "$rsyslog_modules" > "$2/stdout" 2> "$2/stderr" &
  echo $!
}

# Starts syslog-ng on configuration $1 (its variables from the caller's environment), its state
# and output in directory $2; prints its pid.
start_syslog_ng() {
  syslog-ng --foreground --no-caps --cfgfile="$1" --persist-file="$2/persist" \
    --pidfile="$2/pid" --control="$2/ctl" > "$2/stdout" 2> "$2/stderr" &
  echo $!
}

# Sets `written` to the bytes process $2 has written to file $1 and to $1.dead, read from the
# positions of the descriptors it holds them open by (appended to: each file's size), or, when it
# holds neither open, from their sizes. The first way is builtins only: looking costs no process,
# so a poll every few milliseconds takes no CPU from the service measured.
written_by() {
  local out=$1 pid=$2 fd key value found=0 total=0
  for fd in /proc/"$pid"/fd/*; do
    if [ "$fd" -ef "$out" ] || [ "$fd" -ef "$out.dead" ]; then
      while read -r key value; do
        if [ "$key" = pos: ]; then
          total=$((total + value)) found=1
          break
        fi
      done 2> /dev/null < "/proc/$pid/fdinfo/${fd##*/}" || true
    fi
  done
  if [ "$found" -eq 1 ]; then
    written=$total
  elif [ -e "$out" ]; then  # written and closed again: the files' sizes, at the cost of a process
    written=$(stat -c %s "$out" "$out.dead" 2> /dev/null | awk '{ s += $1 } END { print s + 0 }')
  fi
  return 0
}

# Waits until file $1, with $1.dead where a service writes its dead letters, holds $2 lines,
# while process $3 runs, for up to $4 seconds, looking every $5 seconds. Prints the time
# ($EPOCHREALTIME) of the last growth it saw; fails, saying why, if the process exits, the time
# runs out or more lines come. The lines are counted only once the output has been still for
# 0.2 s; until then each look is builtins only (written_by), to the microsecond, and the sleep
# between looks is a read that times out, not a process.
wait_for_lines() {
  local out=$1 want=$2 pid=$3 limit=$4 every=$5 seen=-1 checked=-1 lines=0 pause
  local last=$EPOCHREALTIME now now_us last_us deadline_us
  last_us=${last/./} deadline_us=$((${last/./} + ${limit%%.*} * 1000000))
  written=-1
  exec {pause}<> <(:)
  while :; do
    now=$EPOCHREALTIME now_us=${now/./}
    written_by "$out" "$pid"
    if [ "$written" -gt 0 ] && [ "$written" -ne "$seen" ]; then
      seen=$written last=$now last_us=$now_us
    elif [ "$seen" -gt 0 ] && [ "$seen" -ne "$checked" ] && [ $((now_us - last_us)) -ge 200000 ]; then
      checked=$seen
      lines=$(cat "$out" "$out.dead" 2> /dev/null | wc -l)
      [ "$lines" -ge "$want" ] && break
    fi
    if ! kill -0 "$pid" 2> /dev/null; then
      echo "the service exited" >&2
      exec {pause}>&-
      return 1
    fi
    if [ "$now_us" -gt "$deadline_us" ]; then
      echo "$lines of $want lines in $limit s" >&2
      exec {pause}>&-
      return 1
    fi
    read -r -t "$every" -u "$pause" _ || true
  done
  exec {pause}>&-
  [ "$lines" -eq "$want" ] || { echo "$lines lines written for $want" >&2; return 1; }
  echo "$last"
}

# Stops process $1. It is not the caller's child (it was started in $(...)): wait for it to be gone,
# so that the next service can take its place.
stop_service() {
  kill -TERM "$1" 2> /dev/null || true
  for _ in $(seq 600); do
    kill -0 "$1" 2> /dev/null || break
    sleep 0.05
  done
}

# The machine and the peers' versions, for the results.
describe_machine() {
  printf '%s\n' "machine: $(nproc) cores, $(uname -r), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
  [ -n "$rsyslogd" ] && printf '%s\n' "rsyslog: $("$rsyslogd" -v 2> /dev/null | head -1)"
  [ -n "$syslog_ng" ] && printf '%s\n' "syslog-ng: $(syslog-ng --version | head -1)"
  return 0
}
