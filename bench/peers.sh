# What the service benchmarks (serve_bench.sh, tail_bench.sh) share: rsyslog unpacked from its
# Debian package, and the CPU, memory and stopping of a service they started. Sourced, not run.
#
# Debian's rsyslog and syslog-ng-core packages conflict, so rsyslog is not installed:
# `find_rsyslog WORK` unpacks its package (apt-get download, dpkg -x) under WORK and sets
# `rsyslogd` and `rsyslog_modules` (empty when it could not; its libraries are installed by
# cmake/install-deps.sh). `syslog_ng` is "yes" when syslog-ng is installed.

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
