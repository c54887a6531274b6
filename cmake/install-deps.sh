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
  # tests, and the fuzzers (Clang's libFuzzer)
  libgtest-dev libgmock-dev prometheus spin libxml2-utils clang libclang-rt-14-dev
  # benchmarks and their peers
  libbenchmark-dev libconcurrentqueue-dev libreaderwriterqueue-dev libabsl-dev time
)

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
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
