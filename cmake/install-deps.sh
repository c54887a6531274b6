#!/usr/bin/env bash
# Installs every build, test and benchmark dependency of conveyor from Debian 12 packages.
# Idempotent: packages that are already installed are left alone, and apt is not touched
# at all when nothing is missing. Run as root (or with sudo available).
set -euo pipefail

packages=(
  # toolchain
  g++ cmake ninja-build pkg-config clang-format clang-tidy git ca-certificates curl
  # libraries
  libtbb-dev libboost-dev prometheus-cpp-dev libsimdjson-dev libre2-dev libcli11-dev libfmt-dev zlib1g-dev
  # log-ingest serve: its configuration, TLS on its inputs (and the openssl CLI its tests use),
  # systemd readiness
  libyaml-cpp-dev libssl-dev openssl libsystemd-dev
  # tests, and the fuzzers (Clang's libFuzzer)
  libgtest-dev libgmock-dev prometheus spin libxml2-utils clang libclang-rt-14-dev
  # the systemd unit's check (systemd-analyze)
  systemd
  # benchmarks and their peers
  libbenchmark-dev libconcurrentqueue-dev libreaderwriterqueue-dev libabsl-dev time
  # the log-ingest benchmark's peer (bench/log_ingest_bench.sh), with its apache parser (the SCL)
  syslog-ng-core syslog-ng-scl
  # rsyslog's libraries: bench/serve_bench.sh runs rsyslog unpacked from its package, since it
  # conflicts with syslog-ng as an installed package
  libestr0 libfastjson4 liblognorm5
)

# syslog-ng conflicts with the other system loggers (rsyslog): installing it would remove the
# machine's own. Where one is installed, the benchmark goes without syslog-ng instead.
if dpkg-query -W -f='${Status}' rsyslog 2>/dev/null | grep -q 'install ok installed'; then
  echo "install-deps: rsyslog is installed; skipping syslog-ng, which would replace it"
  kept=()
  for package in "${packages[@]}"; do
    [[ $package == syslog-ng-* ]] || kept+=("$package")
  done
  packages=("${kept[@]}")
fi

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$package")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages are present"
  exit 0
fi

sudo=()
if [ "$(id -u)" -ne 0 ]; then
  sudo=(sudo)
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# Daemons among these (syslog-ng, prometheus) start when installed, through invoke-rc.d or
# deb-systemd-invoke; in a container, a syslog-ng left running would hold /dev/log. The benchmarks
# and tests start their own instances, so nothing is started here: unless a policy is in place
# already (Docker's Debian images have one that denies every start), one that does is put in
# place for the install, and removed after it.
policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
  "${sudo[@]}" sh -c "printf '#!/bin/sh\\nexit 101\\n' > $policy && chmod 755 $policy"
  trap '"${sudo[@]}" rm -f "$policy"' EXIT
fi
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
